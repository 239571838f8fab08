import Foundation
import MeshLocalAPI
import NIOCore
import NIOPosix
import SessionMesh
@testable import SessionMeshClient
import Testing

/// An app that reads its events slowly: the client holds a bounded number of them and stops
/// reading the socket instead of buffering without limit; nothing is dropped on the client.
@Suite("MeshClient event back-pressure")
struct MeshClientBackpressureTests {
    /// An envelope event with inbox id and sequence `sequence`, the size of a small real one
    /// (~200 bytes; the event id derived from the sequence, as `UUID()` costs a syscall).
    static func envelopeFrame(_ sequence: UInt64) throws -> LocalAPIFrame {
        var envelope = template
        envelope.metadata.sequence = sequence
        envelope.payload = Data("message \(sequence)".utf8)
        var bytes = [UInt8](repeating: 0, count: 16)
        withUnsafeBytes(of: sequence.bigEndian) { bytes.replaceSubrange(8..<16, with: $0) }
        envelope.metadata.eventID = bytes.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) }
        let event = MeshEnvelopeEvent(inboxID: sequence, from: "PEERDEV-7654321", mode: .reliableEventually, envelope: envelope)
        return try LocalAPIDataEvent.envelope(event).frame(requestID: 0)
    }

    static let template = Fixtures.envelope(sequence: 0)

    /// The largest flood the tests send, encoded once (the tests run in parallel with others
    /// on two cores).
    static let flood: [LocalAPIFrame] = (1...8_000).compactMap { try? envelopeFrame(UInt64($0)) }

    /// The fake daemons' loop: not the shared singleton, so pushing a flood does not hold up the
    /// I/O of the other suites' connections.
    static let floodGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// A daemon that answers an attach by the app "flood" with `count` envelope events at once.
    /// The events are encoded here, not on the daemon's event loop (which the other tests'
    /// clients share), so a flood does not hold up their I/O.
    /// A flooding fake daemon, a client with `limits` and its attachment to "demo" (as "flood").
    static func floodedClient(count: UInt64, limits: MeshEventBufferLimits) async throws -> (FakeDaemon, MeshClient, MeshAttachment) {
        let daemon = try await floodingDaemon(count: count)
        do {
            let client = try await MeshClient.connect(socketPath: daemon.socketPath, eventBufferLimits: limits)
            do {
                return (daemon, client, try await client.attach(features: ["demo"], app: "flood"))
            } catch {
                await client.close()
                throw error
            }
        } catch {
            await daemon.stop()
            throw error
        }
    }

    static func floodingDaemon(count: UInt64) async throws -> FakeDaemon {
        let flood = Array(Self.flood.prefix(Int(count)))
        return try await FakeDaemon.start(group: floodGroup) { request in
            var responder = StandardResponder()
            if request.operation == .attach,
               let attach = try? LocalAPIJSON.decode(MeshAttachRequest.self, from: request.body, operation: .attach),
               attach.app == "flood" {
                responder.afterAttach = { id in
                    flood.map { frame in
                        var frame = frame
                        frame.requestID = id
                        return frame
                    }
                }
            }
            return responder(request)
        }
    }

    /// The inbox ids of the first `count` envelopes `attachment` delivers (fails after 30 s).
    static func inboxIDs(_ count: UInt64, from attachment: MeshAttachment) async throws -> [UInt64] {
        try await within(30, "reading \(count) events") {
            var ids: [UInt64] = []
            for await event in attachment.events {
                if case .envelope(let envelope) = event { ids.append(envelope.inboxID) }
                if ids.count == Int(count) { break }
            }
            return ids
        }
    }

    /// Runs `body`, failing instead of hanging when it takes longer than `seconds`.
    static func within<T: Sendable>(_ seconds: Double, _ what: String,
                                    _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let result = try await group.next(), let value = result else {
                throw TimeoutError(what: what, seconds: seconds)
            }
            return value
        }
    }

    struct TimeoutError: Error, CustomStringConvertible {
        var what: String
        var seconds: Double
        var description: String { "\(what) did not finish within \(seconds) s" }
    }

    @Test func aStalledConsumerHoldsAtMostTheBoundAndThenGetsEveryEventInOrder() async throws {
        let total: UInt64 = 8_000
        let limits = MeshEventBufferLimits(capacity: 256, lowWatermark: 64)
        let (daemon, client, attachment) = try await Self.floodedClient(count: total, limits: limits)
        defer { Task { await client.close(); await daemon.stop() } }

        // The app does not read: the stream fills up to its bound and the client stops reading.
        #expect(await eventually { (try? await client.bufferedEvents().perStream) == [limits.capacity] })
        // Each sample is a round trip through the client's event loop, which reads the socket
        // between them whenever it is not holding back.
        var peakStream = 0, peakQueuedBytes = 0
        for _ in 0..<20 {
            let buffered = try await client.bufferedEvents()
            peakStream = max(peakStream, buffered.perStream.max() ?? 0)
            peakQueuedBytes = max(peakQueuedBytes, buffered.queuedBytes)
        }
        print("stalled consumer: stream holds \(peakStream) events (bound \(limits.capacity)), the handler \(peakQueuedBytes) bytes of \(total) events sent")
        #expect(peakStream <= limits.capacity)
        // With no request waiting, the handler holds back at most the rest of one read burst.
        #expect(peakQueuedBytes <= 256 * 1024)

        // The app catches up: every event, in order, none lost; requests are answered again.
        let received = try await Self.inboxIDs(total, from: attachment)
        #expect(received == Array(1...total))
        #expect(try await Self.within(10, "a request after the drain") { try await client.ackInbox([1]) } == 1)
    }

    /// The pattern of CLIENT.md: await `ackInbox` inside the event loop, on the same connection.
    /// The reply sits behind events the full stream has no room for; the reserve reaches it.
    @Test func anAppAwaitingARequestInsideItsEventLoopIsNotStuckBehindAFullStream() async throws {
        let total: UInt64 = 1_000
        let limits = MeshEventBufferLimits(capacity: 64, lowWatermark: 16)
        let (daemon, client, attachment) = try await Self.floodedClient(count: total, limits: limits)
        defer { Task { await client.close(); await daemon.stop() } }
        #expect(await eventually { (try? await client.bufferedEvents().perStream) == [limits.capacity] })

        let acknowledged = try await Self.within(30, "acking \(total) events one by one") {
            var acknowledged = 0
            for await event in attachment.events {
                guard case .envelope(let envelope) = event else { continue }
                acknowledged += try await client.ackInbox([envelope.inboxID])
                if envelope.inboxID == total { break }
            }
            return acknowledged
        }
        #expect(acknowledged == Int(total))
        let buffered = try await client.bufferedEvents()
        #expect(buffered.queuedBytes <= limits.replyReserveBytes)
    }

    /// A full stream whose reader was cancelled, or which the app let go of, does not keep the
    /// socket shut: the other attachment's events and the replies come through.
    @Test(arguments: [true, false])
    func aFullStreamWhoseReaderWentAwayDoesNotHoldTheSocketShut(cancelReader: Bool) async throws {
        let daemon = try await Self.floodingDaemon(count: 2_000)
        defer { Task { await daemon.stop() } }
        let limits = MeshEventBufferLimits(capacity: 64, lowWatermark: 16)
        let client = try await MeshClient.connect(socketPath: daemon.socketPath, eventBufferLimits: limits)
        defer { Task { await client.close() } }
        let other = try await client.attach(features: ["demo"], app: "other")
        let otherID = try #require(daemon.requests.first { $0.operation == .attach }?.requestID)
        var flooded: MeshAttachment? = try await client.attach(features: ["demo"], app: "flood")
        let firstTaken = LocalAPIReplySlot<Void>()
        let reader: Task<Void, Never>? = cancelReader ? Task { [events = flooded!.events] in
            // A step that never ends by itself, cut short by the cancel.
            let (never, keepOpen) = AsyncStream<Void>.makeStream()
            for await _ in events {
                firstTaken.succeed(())
                for await _ in never {}
            }
            keepOpen.finish()
        } : nil
        if cancelReader { try await firstTaken.wait() }
        // Full (the reader may have taken one more after it filled) with events waiting behind.
        #expect(await eventually {
            guard let buffered = try? await client.bufferedEvents() else { return false }
            return buffered.queuedFrames > 0 && (buffered.perStream.max() ?? 0) >= limits.capacity - 1
        })
        #expect(try await client.bufferedEvents().perStream.allSatisfy { $0 <= limits.capacity })

        // An event for the other attachment, behind the flood on the socket.
        let change = LocalAPIDataEvent.reachability(MeshReachabilityEvent(peer: "PEERDEV-7654321", featureID: "demo",
                                                                            reachable: true, reason: .appAttached))
        daemon.push(try change.frame(requestID: otherID))

        if let reader {
            reader.cancel()
            await reader.value
        } else {
            flooded = nil
        }
        #expect(flooded == nil || cancelReader)
        let event = try await Self.within(10, "the other attachment's event") { () -> MeshClientEvent? in
            var iterator = other.events.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(event == .reachability(MeshReachabilityEvent(peer: "PEERDEV-7654321", featureID: "demo",
                                                             reachable: true, reason: .appAttached)))
        #expect(await eventually { (try? await client.registeredEventStreams()) == 1 })
        #expect(try await Self.within(10, "a request") { try await client.ackInbox([1]) } == 1)
    }

    /// The transport's `receive…()` streams are bounded too: a subscriber that stops reading (or
    /// no subscriber yet, for envelopes) holds the transport's pump, the pump holds the
    /// attachment's stream, and the client stops reading; then every envelope arrives in order.
    @Test(arguments: [true, false])
    func aStalledTransportSubscriberHoldsTheTransportAndTheClientWithinTheBound(subscribeFirst: Bool) async throws {
        // `start()` awaits snapshot.latest replies while the flood comes in; this fake daemon has
        // no slow-reader policy, so the flood must fit in the reply reserve (3 000 events ≈ 0.6 MB).
        let total: UInt64 = 3_000
        let daemon = try await Self.floodingDaemon(count: total)
        defer { Task { await daemon.stop() } }
        let limits = MeshEventBufferLimits(capacity: 128, lowWatermark: 32)
        let me = SessionPeer(id: "flood", deviceClass: .desktop, appInstanceID: "1")
        let transport = DaemonSessionSyncTransport(socketPath: daemon.socketPath, localPeer: me, features: ["demo"],
                                                   eventBufferLimits: limits)
        let early = subscribeFirst ? transport.receiveEnvelopes() : nil
        try await transport.start()
        let client = try #require(transport.state.withLock { $0.client })

        func held() async -> (transport: Int, client: Int) {
            let counts = transport.envelopes.bufferedCounts
            let stream = (try? await client.bufferedEvents().perStream.max()) ?? 0
            return (max(counts.subscribers.max() ?? 0, counts.backlog), stream)
        }
        // The transport's buffer is full and the client was refused: it holds frames it read and
        // stopped reading. Its stream is full too, less what the pump took after the refusal
        // (no room is reported before the pump reads it down to the low watermark).
        #expect(await eventually {
            let now = await held()
            let queued = (try? await client.bufferedEvents().queuedFrames) ?? 0
            return now.transport == limits.capacity && queued > 0
                && now.client > limits.lowWatermark && now.client <= limits.capacity
        })
        // Each sample is a round trip through the client's event loop (see above).
        var peak = (transport: 0, client: 0)
        for _ in 0..<20 {
            let now = await held()
            peak = (max(peak.transport, now.transport), max(peak.client, now.client))
        }
        print("stalled transport subscriber (subscribed first: \(subscribeFirst)): transport holds \(peak.transport), the client \(peak.client) (bound \(limits.capacity)) of \(total)")
        #expect(peak.transport <= limits.capacity)
        #expect(peak.client <= limits.capacity)
        // Held for the first subscriber, unacknowledged: the backlog plus the one the pump holds.
        if !subscribeFirst { #expect(transport.heldInboxCount == limits.capacity + 1) }

        let envelopes = early ?? transport.receiveEnvelopes()
        let sequences = try await Self.within(60, "reading \(total) envelopes") {
            var sequences: [UInt64] = []
            for await envelope in envelopes {
                sequences.append(envelope.metadata.sequence)
                if sequences.count == Int(total) { break }
            }
            return sequences
        }
        #expect(sequences == Array(1...total))
        // Each was acknowledged once handed to the stream.
        let acked = { daemon.requests.filter { $0.operation == .inboxAck }.reduce(0) { sum, request in
            sum + ((try? LocalAPIJSON.decode(MeshInboxAckRequest.self, from: request.body, operation: .inboxAck))?.ids.count ?? 0)
        } }
        #expect(await eventually(10) { acked() == Int(total) })
        await transport.stop()
    }

    /// An app may keep only the attachment: once the client object is gone, a stream that
    /// filled up still gets the socket read again as the app drains it.
    @Test func anAttachmentThatOutlivesItsClientStillGetsEveryEvent() async throws {
        let total: UInt64 = 2_000
        let daemon = try await Self.floodingDaemon(count: total)
        defer { Task { await daemon.stop() } }
        let limits = MeshEventBufferLimits(capacity: 64, lowWatermark: 16)
        var client: MeshClient? = try await MeshClient.connect(socketPath: daemon.socketPath, eventBufferLimits: limits)
        let attachment = try await client!.attach(features: ["demo"], app: "flood")
        #expect(await eventually { (try? await client!.bufferedEvents().perStream) == [limits.capacity] })
        weak let gone = client
        client = nil
        #expect(gone == nil)

        let received = try await Self.inboxIDs(total, from: attachment)
        #expect(received == Array(1...total))
    }
}
