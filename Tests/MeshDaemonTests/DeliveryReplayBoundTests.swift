import Foundation
import MeshLocalAPI
import NIOCore
import NIOEmbedded
import Testing
@testable import MeshDaemon

/// What a slow app's connection may cost the daemon while its inbox replay runs: live realtime
/// envelopes held for it are bounded (`maximumDeferredLive`), the excess is shed and reported to
/// the app in `events.dropped`; inbox items and other events are all kept, in order.
@Suite("Replay deferral bound and shed reports", .serialized)
struct DeliveryReplayBoundTests {
    @Test func liveRealtimeHeldDuringAReplayIsBoundedAndTheExcessReported() async throws {
        let bed = DeliveryTestBed()
        defer { Task { await bed.shutdown() } }
        var options = DeliveryTestBed.options()
        options.maximumDeferredLive = 4
        let daemon = try await bed.start(name: "bounded", options: options)
        let sink = ShedCountingSink()
        await daemon.router.beginReplayForTest(sink)
        for index in 0..<10 {
            await daemon.router.emitLive(.envelope(from: "peer", inboxID: 0, redelivery: false, mode: 1, encoded: [UInt8(index)]), to: sink)
        }
        // Not capped: an inbox item (it has another path, but is kept anyway) and other events.
        await daemon.router.emitLive(.envelope(from: "peer", inboxID: 77, redelivery: false, mode: 2, encoded: [200]), to: sink)
        await daemon.router.emitLive(.reachability(peer: "peer", featureID: "f", reachable: true, reason: .channelDown), to: sink)
        #expect(sink.received.isEmpty, "nothing reaches the app while its replay runs")

        await daemon.router.endReplay(sink)
        #expect(sink.reported == [6])
        let payloads = sink.received.compactMap { event -> UInt8? in
            guard case .envelope(_, _, _, _, let encoded) = event else { return nil }
            return encoded.first
        }
        #expect(payloads == [0, 1, 2, 3, 200], "the first four live ones and the inbox item, in order")
        #expect(sink.received.count == 6)
        #expect(await daemon.router.counterValues()["delivery.realtime.shed_during_replay"] == 6)

        // A second replay starts from zero (the bound is per replay).
        await daemon.router.beginReplayForTest(sink)
        for index in 0..<3 {
            await daemon.router.emitLive(.envelope(from: "peer", inboxID: 0, redelivery: false, mode: 1, encoded: [UInt8(index)]), to: sink)
        }
        await daemon.router.endReplay(sink)
        #expect(sink.reported == [6])
        #expect(sink.received.count == 9)
    }

    // MARK: - The connection's report


    private func droppedReports(_ channel: EmbeddedChannel) throws -> [UInt64] {
        var reports: [UInt64] = []
        while var bytes = try channel.readOutbound(as: ByteBuffer.self) {
            while let frame = try LocalAPIFrameDecoder.parse(&bytes) {
                guard frame.operation == .eventsDropped else { continue }
                reports.append(try LocalAPIJSON.decode(EventsDroppedEvent.self, from: frame.body, operation: .eventsDropped).dropped)
            }
        }
        return reports
    }

    /// What the connection notes of a shed event: the inbox item of an envelope (to offer it
    /// again, with its flag); nothing for a realtime envelope or another event.
    @Test func aShedEnvelopeNamesItsInboxItem() {
        #expect(DeliveryEvent.envelope(from: "peer", inboxID: 42, redelivery: true, mode: 2, encoded: [1, 2, 3]).shedInboxItem
                == ShedInboxItem(inboxID: 42, redelivery: true))
        #expect(DeliveryEvent.envelope(from: "peer", inboxID: 7, redelivery: false, mode: 2, encoded: []).shedInboxItem
                == ShedInboxItem(inboxID: 7, redelivery: false))
        #expect(DeliveryEvent.envelope(from: "peer", inboxID: 0, redelivery: false, mode: 1, encoded: [9]).shedInboxItem == nil)
        #expect(DeliveryEvent.snapshot(from: "peer", encoded: [1]).shedInboxItem == nil)
    }

    @Test func eventsShedBeforeTheConnectionAreReportedAtOnceOrWhenItIsWritableAgain() throws {
        let (channel, counters) = try EmbeddedLocalAPIConnection.make()
        defer { _ = try? channel.finish() }
        let handler = try channel.pipeline.syncOperations.handler(type: LocalAPIConnectionHandler.self)
        let sink = try #require(handler.connection).makeSink(requestID: 3)
        sink.reportShed(7)
        #expect(try droppedReports(channel) == [7])
        #expect(counters.value(.eventsShed) == 7)

        // While the client does not read, the count waits and joins what the connection sheds.
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        sink.reportShed(5)
        sink.emit(.envelope(from: "peer", inboxID: 0, redelivery: false, mode: 1, encoded: []))
        sink.flushNow()
        #expect(try droppedReports(channel) == [])
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try droppedReports(channel) == [6])
    }
}

/// A sink that records events and shed reports.
final class ShedCountingSink: DeliveryEventSink, @unchecked Sendable {
    private let lock = NSLock()
    private var events: [DeliveryEvent] = []
    private var reports: [UInt64] = []

    func emit(_ event: DeliveryEvent) { lock.withLock { events.append(event) } }
    func reportShed(_ count: UInt64) { lock.withLock { reports.append(count) } }

    var received: [DeliveryEvent] { lock.withLock { events } }
    var reported: [UInt64] { lock.withLock { reports } }
}

extension DeliveryRouter {
    /// Marks `sink` as replaying, as `attach` and `reoffer` do before a replay.
    func beginReplayForTest(_ sink: any DeliveryEventSink) {
        handOut.state.replaying[ObjectIdentifier(sink)] = SinkReplay()
    }
}
