import Foundation
import MeshLocalAPI
import NIOCore
import NIOPosix
import SessionMesh
@testable import SessionMeshClient
import Testing

/// `send(envelope:mode:to:completion:)` and `attach(features:sessionID:app:onEnd:onEvent:)`
/// against a scripted daemon: what goes on the wire, which outcome each completion gets, the
/// order and thread of events, and when the end runs.
@Suite("MeshClient callbacks")
struct MeshClientCallbackTests {
    /// What the callbacks saw, from whichever thread they ran on.
    final class Record: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [String] = []
        private var offLoop = 0

        func add(_ item: String, onLoop: Bool) {
            lock.withLock {
                items.append(item)
                if !onLoop { offLoop += 1 }
            }
        }

        var all: [String] { lock.withLock { items } }
        var callsOffTheLoop: Int { lock.withLock { offLoop } }
    }

    /// Returns once every task queued on the client's loop so far has run (a completion or an
    /// end that was still to come would have come by then).
    static func loopBarrier(_ client: MeshClient) async throws {
        try await client.channel.eventLoop.submit {}.get()
    }

    /// One request round trip (`queue`): every frame the daemon wrote before its reply has been
    /// handled when it returns.
    static func roundTrip(_ client: MeshClient) async throws {
        _ = try await client.send(.queue, body: try LocalAPIJSON.encode(EmptyBody()))
    }

    @Test func completionsGetEachOutcomeOnTheLoopAndTheFramesAreThoseOfTheAsyncCall() async throws {
        let daemon = try await FakeDaemon.start(MeshClientBatchTests.queueFullForEvenSequences)
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let loop = client.channel.eventLoop
        let record = Record()
        let envelopes = (1...6).map { Fixtures.envelope(sequence: UInt64($0)) }
        for envelope in envelopes {
            try client.send(envelope: envelope, mode: .reliableEventually, to: "PEERDEV") { result in
                let sequence = envelope.metadata.sequence
                switch result {
                case .success(let reply):
                    record.add("\(sequence) \(reply.outcome) \(reply.eventID == envelope.metadata.eventID)", onLoop: loop.inEventLoop)
                case .failure(let error):
                    record.add("\(sequence) \(error.kind) \(error.code) \(error.message)", onLoop: loop.inEventLoop)
                }
            }
        }
        #expect(await eventually { record.all.count == 6 })
        #expect(record.all.sorted() == [
            "1 queued true", "2 daemon queue-full outbox full at 2", "3 queued true",
            "4 daemon queue-full outbox full at 4", "5 queued true", "6 daemon queue-full outbox full at 6",
        ])
        #expect(record.callsOffTheLoop == 0)
        // On the wire in the order of the calls, each the body the async call writes.
        #expect(try daemon.requests.map { try MeshSendRequest.decode($0.body) }
                == envelopes.map { MeshSendRequest(mode: .reliableEventually, target: "PEERDEV", envelope: $0) })
        _ = try? await client.send(envelope: envelopes[0], mode: .reliableEventually, to: "PEERDEV")
        #expect(daemon.requests.last?.body == daemon.requests.first?.body)
        #expect(daemon.requests.last?.flags == daemon.requests.first?.flags)
        // Exactly once each: nothing more arrives later.
        try await Self.loopBarrier(client)
        #expect(record.all.count == 6)
        await client.close()
    }

    @Test func sendsFromTheLoopGoOutInOrderAndAnEnvelopeThatCannotBeSentThrowsWithoutACompletion() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let record = Record()
        let count = 300
        let envelopes = (1...count).map { Fixtures.envelope(sequence: UInt64($0)) }
        // A pipelined sender on the loop: each completion sends the next, 16 in flight.
        let next = Locked(0)
        @Sendable func sendNext() {
            let index = next.withLock { value in
                defer { value += 1 }
                return value
            }
            guard index < count else { return }
            do {
                try client.send(envelope: envelopes[index], mode: .realtimeBestEffort) { result in
                    record.add((try? result.get().eventID.uuidString) ?? "failed", onLoop: client.channel.eventLoop.inEventLoop)
                    sendNext()
                }
            } catch {
                record.add("threw", onLoop: true)
            }
        }
        try await client.channel.eventLoop.submit { for _ in 0..<16 { sendNext() } }.get()
        // Stuck sends fail after 10 s without a completion; a slow machine only makes them slower.
        #expect(await eventually(stalledFor: 10, progress: { record.all.count }) { record.all.count == count })
        #expect(Set(record.all) == Set(envelopes.map(\.metadata.eventID.uuidString)))
        #expect(record.callsOffTheLoop == 0)
        #expect(try daemon.requests.map { try MeshSendRequest.decode($0.body).envelope.metadata.sequence } == (1...count).map(UInt64.init))

        var bad = Fixtures.envelope(sequence: 9)
        bad.metadata.payloadType = String(repeating: "t", count: 2_000)
        let before = daemon.requests.count
        #expect(throws: MeshClientError.self) {
            try client.send(envelope: bad, mode: .realtimeBestEffort) { _ in record.add("completed", onLoop: true) }
        }
        do {
            try client.send(envelope: Fixtures.envelope(sequence: 1), mode: .realtimeBestEffort, to: String(repeating: "p", count: 300)) { _ in
                record.add("completed", onLoop: true)
            }
            Issue.record("a target over 255 bytes was sent")
        } catch {
            #expect(error.kind == .invalidArgument)
        }
        // Whatever those calls had written would reach the daemon before this request.
        try await Self.roundTrip(client)
        #expect(daemon.requests.count == before + 1)
        #expect(daemon.requests.last?.operation == .queue)
        try await Self.loopBarrier(client)
        #expect(!record.all.contains("completed"))
        await client.close()
    }

    @Test func whenTheConnectionEndsUnansweredCompletionsGetConnectionClosedAndSoDoLaterOnes() async throws {
        // Answers sequences 1 and 2 only.
        let daemon = try await FakeDaemon.start { request in
            guard request.operation == .send, let send = try? MeshSendRequest.decode(request.body) else { return StandardResponder()(request) }
            return send.envelope.metadata.sequence <= 2 ? StandardResponder()(request) : []
        }
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let record = Record()
        for sequence in 1...5 {
            try client.send(envelope: Fixtures.envelope(sequence: UInt64(sequence)), mode: .reliableEventually) { result in
                switch result {
                case .success: record.add("\(sequence) sent", onLoop: true)
                case .failure(let error): record.add("\(sequence) \(error.kind)", onLoop: true)
                }
            }
        }
        #expect(await eventually { daemon.requests.count == 5 && record.all.count == 2 })
        daemon.dropConnections()
        #expect(await eventually { record.all.count == 5 })
        #expect(record.all.sorted() == ["1 sent", "2 sent", "3 connectionClosed", "4 connectionClosed", "5 connectionClosed"])
        try client.send(envelope: Fixtures.envelope(sequence: 6), mode: .reliableEventually) { result in
            if case .failure(let error) = result { record.add("6 \(error.kind)", onLoop: true) } else { record.add("6 sent", onLoop: true) }
        }
        #expect(await eventually { record.all.count == 6 })
        #expect(record.all.last == "6 connectionClosed")
    }

    @Test func aPipelinedSenderWhoseConnectionClosedGetsEveryFailureWithoutRecursing() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        // A loop of its own: 20 000 sends keep it busy for a while in a debug build, and other
        // tests running meanwhile share the default group's loops.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { Task { try? await group.shutdownGracefully() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath, eventLoopGroup: group)
        _ = try await client.send(envelope: Fixtures.envelope(sequence: 0), mode: .realtimeBestEffort)
        daemon.dropConnections()
        #expect(await eventually { !client.channel.isActive })
        // Each completion sends the next, as a pipelined sender does; on a closed connection every
        // send fails at once. 20 000 of them must not each nest inside the one before (that
        // overflowed the loop thread's stack).
        let count = 20_000
        let record = Record()
        let failures = Locked(0)
        @Sendable func sendNext(_ index: Int) {
            guard index < count else {
                record.add("done", onLoop: client.channel.eventLoop.inEventLoop)
                return
            }
            do {
                try client.send(envelope: Fixtures.envelope(sequence: UInt64(index)), mode: .realtimeBestEffort) { result in
                    if case .failure(let error) = result, error.kind == .connectionClosed { failures.withLock { $0 += 1 } }
                    sendNext(index + 1)
                }
            } catch {
                record.add("threw", onLoop: true)
            }
        }
        try await client.channel.eventLoop.submit { sendNext(0) }.get()
        #expect(await eventually(30) { record.all == ["done"] })
        #expect(failures.withLock { $0 } == count)
        #expect(record.callsOffTheLoop == 0)
    }

    @Test func aHandlerGetsEveryEventInOrderOnTheLoopThenItsEndOnce() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let loop = client.channel.eventLoop
        let record = Record()
        let attachment = try await client.attach(features: ["demo"], app: "handler", onEnd: { record.add("end", onLoop: loop.inEventLoop) }) { event in
            switch event {
            case .envelope(let e): record.add("envelope \(e.envelope.metadata.sequence) \(e.inboxID)", onLoop: loop.inEventLoop)
            case .eventsDropped(let count): record.add("dropped \(count)", onLoop: loop.inEventLoop)
            default: record.add("other", onLoop: loop.inEventLoop)
            }
        }
        #expect(attachment == MeshHandlerAttachment(attachmentID: 1, localDeviceID: "LOCALDEV-1234567",
                                                    peers: [MeshAttachedPeer(deviceID: "PEERDEV-7654321", name: "peer", reachable: true)]))
        #expect(try await client.registeredEventStreams() == 1)
        let id = try #require(daemon.requests.first { $0.operation == .attach }?.requestID)
        for sequence in 1...200 {
            let event = MeshEnvelopeEvent(inboxID: UInt64(sequence), from: "PEERDEV-7654321", mode: .reliableEventually,
                                          envelope: Fixtures.envelope(sequence: UInt64(sequence)))
            daemon.push(try LocalAPIDataEvent.envelope(event).frame(requestID: id))
            if sequence == 100 { daemon.push(try LocalAPIDataEvent.eventsDropped(EventsDroppedEvent(dropped: 3)).frame(requestID: 0)) }
        }
        // Another request id's events are not this handler's.
        daemon.push(try LocalAPIDataEvent.eventsDropped(EventsDroppedEvent(dropped: 1)).frame(requestID: id + 1000))
        #expect(await eventually { record.all.count == 201 })
        let expected = (1...100).map { "envelope \($0) \($0)" } + ["dropped 3"] + (101...200).map { "envelope \($0) \($0)" }
        #expect(record.all == expected)
        #expect(record.callsOffTheLoop == 0)
        #expect(try await client.bufferedEvents().perStream == [0])

        await client.close()
        #expect(await eventually { record.all.count == 202 })
        #expect(record.all.last == "end")
        try await Self.loopBarrier(client)
        #expect(record.all.count == 202)
        #expect(record.callsOffTheLoop == 0)
    }

    @Test func aHandlerThatSendsFromInsideItselfGetsEveryCompletion() async throws {
        let daemon = try await FakeDaemon.start(StandardResponder().callAsFunction)
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let record = Record()
        // An app that answers every envelope event at once, from its handler, on the loop.
        _ = try await client.attach(features: ["demo"], app: "echo") { event in
            guard case .envelope(let received) = event else { return }
            let sequence = received.envelope.metadata.sequence
            do {
                try client.send(envelope: Fixtures.envelope(sequence: 1_000 + sequence), mode: .realtimeBestEffort) { result in
                    record.add((try? result.get()) == nil ? "failed \(sequence)" : "answered \(sequence)", onLoop: client.channel.eventLoop.inEventLoop)
                }
            } catch {
                record.add("threw \(sequence)", onLoop: true)
            }
        }
        let id = try #require(daemon.requests.first { $0.operation == .attach }?.requestID)
        for sequence in 1...100 {
            let event = MeshEnvelopeEvent(inboxID: 0, from: "PEERDEV-7654321", mode: .realtimeBestEffort,
                                          envelope: Fixtures.envelope(sequence: UInt64(sequence)))
            daemon.push(try LocalAPIDataEvent.envelope(event).frame(requestID: id))
        }
        #expect(await eventually { record.all.count == 100 })
        #expect(Set(record.all) == Set((1...100).map { "answered \($0)" }))
        #expect(record.callsOffTheLoop == 0)
        let echoed = try daemon.requests.filter { $0.operation == .send }.map { try MeshSendRequest.decode($0.body).envelope.metadata.sequence }
        #expect(echoed == (1_001...1_100).map(UInt64.init))
        await client.close()
    }

    @Test func aFailedOrCancelledHandlerAttachIsUnregisteredAndEnded() async throws {
        // Refuses an attach by the app "refused"; never answers one by "hang".
        let daemon = try await FakeDaemon.start { request in
            if request.operation == .attach,
               let attach = try? LocalAPIJSON.decode(MeshAttachRequest.self, from: request.body, operation: .attach) {
                if attach.app == "refused" { return [.error(to: request, code: "forbidden", message: "not for this uid")] }
                if attach.app == "hang" { return [] }
            }
            return StandardResponder()(request)
        }
        defer { Task { await daemon.stop() } }
        let client = try await MeshClient.connect(socketPath: daemon.socketPath)
        let record = Record()
        do {
            _ = try await client.attach(features: ["demo"], app: "refused", onEnd: { record.add("refused end", onLoop: true) }) { _ in
                record.add("refused event", onLoop: true)
            }
            Issue.record("a refused attach returned")
        } catch let error as MeshClientError {
            #expect(error.code == "forbidden")
        }
        #expect(await eventually { record.all == ["refused end"] })

        for round in 1...10 {
            let attach = Task {
                try await client.attach(features: ["demo"], app: "hang", onEnd: { record.add("hang end \(round)", onLoop: true) }) { _ in
                    record.add("hang event", onLoop: true)
                }
            }
            let written = daemon.requests.count + 1
            _ = await eventually { daemon.requests.count >= written }
            attach.cancel()
            await #expect(throws: (any Error).self) { try await attach.value }
        }
        #expect(await eventually { record.all.count == 11 })
        #expect(Set(record.all) == Set(["refused end"] + (1...10).map { "hang end \($0)" }))
        #expect(await eventually { (try? await client.registeredEventStreams()) == 0 })
        // Events for a hung attach's id reach nobody.
        if let hung = daemon.requests.last(where: { $0.operation == .attach })?.requestID {
            daemon.push(try LocalAPIDataEvent.eventsDropped(EventsDroppedEvent(dropped: 2)).frame(requestID: hung))
        }
        try await Self.roundTrip(client)
        #expect(!record.all.contains { $0.hasSuffix("event") })
        await client.close()
        try await Self.loopBarrier(client)
        #expect(record.all.count == 11)
    }
}
