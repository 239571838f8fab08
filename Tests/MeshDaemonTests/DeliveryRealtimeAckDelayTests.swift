import Foundation
import SessionMesh
import Testing
@testable import MeshDaemon

extension DeliveryIntegration {
    /// The receiver holds realtime acks back while a stream keeps arriving
    /// (`DeliveryRouterOptions.realtimeAckDelay`): fewer ack datagrams, none lost.
    @Suite("Delivery realtime acks held back between two daemons", .serialized)
    struct DeliveryRealtimeAckDelayTests {
        /// A sender that waits long for acks, so a held-back ack never turns into a fallback.
        static func patientSender() -> DeliveryRouterOptions {
            var options = DeliveryTestBed.options()
            options.minimumAckDeadline = 5
            options.maximumAckDeadline = 10
            return options
        }

        static func receiver(ackDelay: Double) -> DeliveryRouterOptions {
            var options = DeliveryTestBed.options()
            options.realtimeAckDelay = ackDelay
            return options
        }

        /// Sends `count` realtime items one loop turn each, `spacing` apart; returns the
        /// receiver's ack datagrams once the sender has all acks.
        static func stream(count: Int, spacing: Duration, ackDelay: Double) async throws -> (ackDatagrams: UInt64, fallbacks: UInt64) {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b, _, sinkB) = try await bed.pairWithApps(optionsA: patientSender(), optionsB: receiver(ackDelay: ackDelay))
            for index in 1...count {
                let send = try RouterFixtures.envelope("s\(index)", sequence: UInt64(index))
                let outcome = await a.router.sendImmediatelyInOneTurn([send])
                #expect(outcome == ["sent"])
                try await Task.sleep(for: spacing)
            }
            try await waitUntil("\(count) realtime items", timeout: 5) { sinkB.envelopes.count >= count }
            #expect(sinkB.envelopes.map { RouterFixtures.text($0.envelope) } == (1...count).map { "s\($0)" })
            let sent = try await bed.realtimeSettled(a, count: count)
            let received = await b.router.counterValues()
            await bed.shutdown()
            return (received["delivery.realtime.ack_datagrams"] ?? 0, sent["delivery.realtime.fallbacks"] ?? 0)
        }

        @Test func aSteadyStreamIsAckedOncePerIntervalAndTheHeldAcksStillCome() async throws {
            // 20 items 5 ms apart inside one 250 ms interval: the first is acked at once (nothing
            // was acked lately), the other 19 together when the interval is over — by the timer,
            // since nothing arrives after them. A slow machine stretching the stream past the
            // interval adds a datagram or two, never one per item.
            let held = try await Self.stream(count: 20, spacing: .milliseconds(5), ackDelay: 0.25)
            print("20 realtime items 5 ms apart, acks held up to 250 ms: \(held.ackDatagrams) ack datagrams")
            #expect(held.ackDatagrams >= 2 && held.ackDatagrams <= 4)
            #expect(held.fallbacks == 0)
            // Without the hold, each item that arrives in a loop turn of its own is acked in it.
            let immediate = try await Self.stream(count: 20, spacing: .milliseconds(10), ackDelay: 0)
            print("20 realtime items 10 ms apart, acks not held: \(immediate.ackDatagrams) ack datagrams")
            #expect(immediate.ackDatagrams >= 10)
            #expect(immediate.fallbacks == 0)
        }

        @Test func aFullAckDatagramIsNotHeldBack() async throws {
            let bed = DeliveryTestBed()
            defer { Task { await bed.shutdown() } }
            let (a, b, _, sinkB) = try await bed.pairWithApps(optionsA: Self.patientSender(), optionsB: Self.receiver(ackDelay: 1))
            // A first item: acked at once, and the next acks are due a second later.
            let first = await a.router.sendImmediatelyInOneTurn([try RouterFixtures.envelope("first", sequence: 1)])
            #expect(first == ["sent"])
            _ = try await bed.realtimeSettled(a, count: 1)
            let burst = try (2...131).map { try RouterFixtures.envelope("b\($0)", sequence: UInt64($0)) }
            let outcomes = await a.router.sendImmediatelyInOneTurn(burst)
            #expect(outcomes == Array(repeating: "sent", count: burst.count))
            // 130 acks in a turn or two: the full datagrams of 64 go at once, long before the
            // second is over (the held rest would only go at the timer, two seconds after the first ack).
            try await waitUntil("a full ack datagram", timeout: 0.9) {
                (await a.router.counterValues()["delivery.realtime.acked"] ?? 0) >= 65
            }
            try await waitUntil("131 realtime items", timeout: 5) { sinkB.envelopes.count >= 131 }
            let sent = try await bed.realtimeSettled(a, count: 131)
            #expect(sent["delivery.realtime.fallbacks"] ?? 0 == 0)
            let received = await b.router.counterValues()
            #expect((received["delivery.realtime.ack_datagrams"] ?? 0) <= 5)
            await bed.shutdown()
        }
    }
}
