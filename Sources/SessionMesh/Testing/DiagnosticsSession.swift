import Foundation
import Synchronization

/// A transport wrapper that records every send and every receive of the transport it wraps,
/// for tests and for diagnosing a misbehaving pair of devices.
///
/// Records carry identities and sizes only (session, feature, source, sequence, event id,
/// mode, target, byte count), never payload bytes, so a recording is safe to print.
/// Receives are recorded when the consumer takes the element from a stream made by this
/// wrapper's `receive…()` methods.
public final class DiagnosticsSession: SessionSyncTransport {
    /// One recorded event.
    public struct Record: Sendable, Hashable {
        /// Whether this peer sent or received it.
        public enum Direction: String, Sendable, Hashable {
            /// This peer sent it.
            case sent
            /// This peer received it.
            case received
        }
        /// What moved.
        public enum Kind: String, Sendable, Hashable {
            /// An ``AnySessionSyncEnvelope``.
            case envelope
            /// An ``AnySessionSyncSnapshot``.
            case snapshot
            /// A ``SessionSnapshotRequest``.
            case snapshotRequest
            /// A ``SessionPeerReachability`` change.
            case reachability
        }
        /// Position in the recording, from 0.
        public var index: Int
        /// Sent or received.
        public var direction: Direction
        /// Envelope, snapshot, request or reachability change.
        public var kind: Kind
        /// The session, when the item names one.
        public var sessionID: UUID?
        /// The feature, when the item names one.
        public var featureID: String?
        /// The originating peer (for a request: the requester; for reachability: the subject).
        public var sourcePeerID: String?
        /// The sequence, for envelopes and snapshots.
        public var sequence: UInt64?
        /// The event id, for envelopes and snapshots.
        public var eventID: UUID?
        /// The delivery mode, for sends.
        public var mode: SessionDeliveryMode?
        /// The target peer of a send (`nil`: all).
        public var targetPeerID: String?
        /// Payload or state size in bytes.
        public var byteCount: Int?
    }

    /// The wrapped transport.
    public let base: any SessionSyncTransport
    private let log = Mutex<[Record]>([])

    /// Wraps `base`; everything is forwarded to it.
    public init(wrapping base: any SessionSyncTransport) { self.base = base }

    /// The wrapped transport's peer.
    public var localPeer: SessionPeer { base.localPeer }
    /// The wrapped transport's capabilities.
    public var capabilities: SessionTransportCapabilities { base.capabilities }
    /// Everything recorded so far, in order.
    public var records: [Record] { log.withLock { $0 } }

    /// Records and forwards.
    public func send(_ envelope: AnySessionSyncEnvelope, mode: SessionDeliveryMode, to peer: SessionPeer?) async throws {
        record(.sent, .envelope, envelope.metadata, mode: mode, target: peer?.id, bytes: envelope.payload.count)
        try await base.send(envelope, mode: mode, to: peer)
    }

    /// Records and forwards.
    public func sendSnapshot(_ snapshot: AnySessionSyncSnapshot, mode: SessionDeliveryMode, to peer: SessionPeer?) async throws {
        record(.sent, .snapshot, snapshot.metadata, mode: mode, target: peer?.id, bytes: snapshot.state.count)
        try await base.sendSnapshot(snapshot, mode: mode, to: peer)
    }

    /// Records and forwards.
    public func requestSnapshot(sessionID: UUID, from peer: SessionPeer?) async throws {
        append(Record(index: 0, direction: .sent, kind: .snapshotRequest, sessionID: sessionID, sourcePeerID: localPeer.id, mode: .snapshotRequest, targetPeerID: peer?.id))
        try await base.requestSnapshot(sessionID: sessionID, from: peer)
    }

    /// The wrapped stream, recording each envelope as it is taken.
    public func receiveEnvelopes() -> AsyncStream<AnySessionSyncEnvelope> {
        relay(base.receiveEnvelopes()) { [weak self] e in self?.record(.received, .envelope, e.metadata, bytes: e.payload.count) }
    }

    /// The wrapped stream, recording each snapshot as it is taken.
    public func receiveSnapshots() -> AsyncStream<AnySessionSyncSnapshot> {
        relay(base.receiveSnapshots()) { [weak self] s in self?.record(.received, .snapshot, s.metadata, bytes: s.state.count) }
    }

    /// The wrapped stream, recording each request as it is taken.
    public func receiveSnapshotRequests() -> AsyncStream<SessionSnapshotRequest> {
        relay(base.receiveSnapshotRequests()) { [weak self] r in
            self?.append(Record(index: 0, direction: .received, kind: .snapshotRequest, sessionID: r.sessionID, featureID: r.featureID, sourcePeerID: r.requestingPeerID, targetPeerID: r.targetPeerID))
        }
    }

    /// The wrapped stream, recording each change as it is taken.
    public func reachabilityChanges() -> AsyncStream<SessionPeerReachability> {
        relay(base.reachabilityChanges()) { [weak self] c in
            self?.append(Record(index: 0, direction: .received, kind: .reachability, featureID: c.featureID, sourcePeerID: c.peer.id))
        }
    }

    /// Forwarded unrecorded (a read, not a receive).
    public func latestPeerSnapshot(featureID: String) -> AnySessionSyncSnapshot? { base.latestPeerSnapshot(featureID: featureID) }

    private func record(_ direction: Record.Direction, _ kind: Record.Kind, _ m: SessionSyncMetadata, mode: SessionDeliveryMode? = nil, target: String? = nil, bytes: Int) {
        append(Record(index: 0, direction: direction, kind: kind, sessionID: m.sessionID, featureID: m.featureID, sourcePeerID: m.sourcePeerID, sequence: m.sequence, eventID: m.eventID, mode: mode, targetPeerID: target, byteCount: bytes))
    }

    private func append(_ record: Record) {
        log.withLock { all in
            var record = record
            record.index = all.count
            all.append(record)
        }
    }

    private func relay<Element: Sendable>(_ stream: AsyncStream<Element>, onElement: @escaping @Sendable (Element) -> Void) -> AsyncStream<Element> {
        let box = IteratorBox(stream.makeAsyncIterator())
        return AsyncStream(unfolding: {
            guard let element = await box.next() else { return nil }
            onElement(element)
            return element
        })
    }
}

/// Lets an `AsyncStream` iterator be driven from the `@Sendable` closure of
/// `AsyncStream(unfolding:)`. Safe because that closure is never run concurrently with itself.
private final class IteratorBox<Element: Sendable>: @unchecked Sendable {
    private var iterator: AsyncStream<Element>.Iterator
    init(_ iterator: AsyncStream<Element>.Iterator) { self.iterator = iterator }
    func next() async -> Element? { await iterator.next() }
}
