#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import NIOPosix
import SessionMesh
import SessionMeshClient
import Testing

/// `MeshClient.send(envelope:mode:to:completion:)` and `attach(…onEvent:)` against two real
/// `meshd`: pipelined sends from the sending connection's loop, every envelope at the peer's
/// handler once, reliable ones with an inbox id, and one outcome per send.
@Suite("MeshClient callbacks between meshd processes", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ProcessDeliveryCallbackTests {
    /// Collected from the callbacks' threads.
    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var replies: [UUID: MeshSendReply] = [:]
        private var failures: [String] = []
        private var events: [MeshEnvelopeEvent] = []
        private var nextIndex = 0

        /// The index of the next envelope to send.
        func takeIndex() -> Int {
            lock.withLock {
                defer { nextIndex += 1 }
                return nextIndex
            }
        }

        func reply(_ result: Result<MeshSendReply, MeshClientError>) {
            lock.withLock {
                switch result {
                case .success(let reply): replies[reply.eventID] = reply
                case .failure(let error): failures.append("\(error)")
                    changed.notify()
        }
            }
        }

        func event(_ event: MeshEnvelopeEvent) {
            lock.withLock { events.append(event) }
            changed.notify()
        }
        /// Notified on every reply and every event.
        let changed = ChangeSignal()

        var answered: Int { lock.withLock { replies.count + failures.count } }
        var snapshot: (replies: [UUID: MeshSendReply], failures: [String], events: [MeshEnvelopeEvent]) {
            lock.withLock { (replies, failures, events) }
        }
    }

    @Test func pipelinedCallbackSendsArriveOnceAtAHandlerWithOneOutcomeEach() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let appA = try await MeshClient.connect(socketPath: pair.a.socketPath)
        let appB = try await MeshClient.connect(socketPath: pair.b.socketPath)
        defer { Task { await appA.close(); await appB.close() } }
        let collected = Collected()
        _ = try await appB.attach(features: ["callbacks"], app: "receiver") { event in
            if case .envelope(let envelope) = event { collected.event(envelope) }
        }
        let presence = try await appA.attach(features: ["callbacks"], app: "sender")
        try await ProcessFixtures.awaitFeatureReachable(presence, peer: pair.idB, feature: "callbacks", timeout: 8)

        // 400 realtime then 40 reliable, 32 in flight, each completion sending the next.
        let envelopes = (1...440).map { ProcessFixtures.envelope(UInt64($0), feature: "callbacks") }
        @Sendable func sendNext() {
            let index = collected.takeIndex()
            guard index < envelopes.count else { return }
            do {
                try appA.send(envelope: envelopes[index], mode: index < 400 ? .realtimeBestEffort : .reliableEventually, to: pair.idB) { result in
                    collected.reply(result)
                    sendNext()
                }
            } catch {
                collected.reply(.failure(error))
            }
        }
        try await withTaskExecutorPreference(appA.taskExecutor) {
            for _ in 0..<32 { sendNext() }
        }
        let done = await collected.changed.until(20) {
            collected.answered >= envelopes.count && collected.snapshot.events.count >= envelopes.count
        }
        let (replies, failures, events) = collected.snapshot
        #expect(done == true, "answered \(replies.count + failures.count), received \(events.count) of \(envelopes.count)")
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(Set(replies.keys) == Set(envelopes.map(\.metadata.eventID)))
        #expect(replies.values.allSatisfy { $0.peers == 1 })
        #expect(envelopes.prefix(400).allSatisfy { [.sent, .queued].contains(replies[$0.metadata.eventID]?.outcome) })
        #expect(envelopes.suffix(40).allSatisfy { replies[$0.metadata.eventID]?.outcome == .queued })
        // Each envelope once at B's handler; the reliable ones with an inbox id to ack.
        #expect(events.count == envelopes.count)
        #expect(Set(events.map(\.envelope.metadata.eventID)) == Set(envelopes.map(\.metadata.eventID)))
        let reliable = events.filter { $0.mode == .reliableEventually }
        #expect(reliable.count >= 40)
        #expect(reliable.allSatisfy { $0.inboxID != 0 })
        #expect(try await appB.ackInbox(reliable.map(\.inboxID)) == reliable.count)
        #expect(try await appB.queue().isEmpty)
    }
}
