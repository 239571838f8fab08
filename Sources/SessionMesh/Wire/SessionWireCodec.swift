import Foundation

/// The one binary encoding of ``AnySessionSyncEnvelope``, ``AnySessionSyncSnapshot`` and
/// ``SessionSnapshotRequest``: what daemons carry between devices and over the local socket.
///
/// Compact, versioned and strict: decoding checks every length against ``SessionWireLimits``,
/// accepts only minimal varints, valid UTF-8, finite timestamps, zero reserved bits and no
/// trailing bytes, and reports anything else as a ``SessionWireError`` (never a trap). Encoding
/// is canonical: equal values give equal bytes. Also described in `docs/ENCODING.md`.
///
/// ```
/// Message (every kind)
/// +------+------+---------+------+=====================+
/// | 0x53 | 0x4D | format  | kind | body                |   format = 1
/// | 'S'  | 'M'  | version |      | (ends at input end) |   kind: 1 envelope,
/// +------+------+---------+------+=====================+         2 snapshot, 3 request
///
/// Envelope body  = Metadata, payload:Bytes
/// Snapshot body  = Metadata, revision:UV, n:UV, n × (peerID:Str, sequence:UV), state:Bytes
///                  (peer ids strictly ascending by UTF-8 bytes; n ≤ maxReflectedPeers)
/// Request body   = protocolVersion:UV, sessionID:16, flags:1, requestingPeerID:Str,
///                  [featureID:Str] [targetPeerID:Str] [expectedSequence:UV] [receivedSequence:UV]
///                  flags: bit0 featureID, bit1 targetPeerID, bit2 expected, bit3 received
///
/// Metadata
/// +-----------------+-----------+-------+-----------+--------------+---------+----------+
/// | protocolVersion | sessionID | flags | featureID | sourcePeerID | eventID | sequence |
/// | UV              | 16        | 1     | Str       | Str          | 16      | UV       |
/// +-----------------+-----------+-------+-----------+--------------+---------+----------+
/// +-----------------+----------------------+-------------+------------------------+
/// | causalTimestamp | [monotonicTimestamp] | payloadType | [acknowledgedSequence] |
/// | F64             | F64 if flags bit0    | Str         | UV if flags bit1       |
/// +-----------------+----------------------+-------------+------------------------+
///
/// UV    unsigned LEB128 varint, minimal, ≤ 10 bytes (protocolVersion ≤ 2^31−1)
/// 16    a UUID's 16 bytes in RFC 4122 order
/// F64   IEEE-754 binary64, big-endian: seconds since 2001-01-01T00:00:00Z (`Date`'s
///       reference date) or, for monotonicTimestamp, the source's monotonic seconds; finite
/// Str   UV byte length (≤ maxStringBytes), then UTF-8
/// Bytes UV byte length (≤ maxPayloadBytes), then the bytes
/// flags reserved bits must be 0
/// ```
public enum SessionWireCodec {
    /// The format version byte this build writes and reads.
    public static let formatVersion: UInt8 = 1

    /// What a message holds (the fourth byte).
    public enum Kind: UInt8, Sendable, Hashable, CaseIterable {
        /// An ``AnySessionSyncEnvelope``.
        case envelope = 1
        /// An ``AnySessionSyncSnapshot``.
        case snapshot = 2
        /// A ``SessionSnapshotRequest``.
        case snapshotRequest = 3
    }

    /// Any decoded message.
    public enum Message: Sendable, Hashable {
        /// An envelope.
        case envelope(AnySessionSyncEnvelope)
        /// A snapshot.
        case snapshot(AnySessionSyncSnapshot)
        /// A snapshot request.
        case snapshotRequest(SessionSnapshotRequest)
    }

    // MARK: - Encoding

    /// Encodes an envelope. Throws ``SessionWireError`` when a field exceeds `limits`, a
    /// timestamp is not finite, or the protocol version is out of range.
    public static func encode(_ envelope: AnySessionSyncEnvelope, limits: SessionWireLimits = .default) throws -> [UInt8] {
        var w = WireWriter(bytes: [], capacity: 96 + envelope.payload.count, limits: limits)
        try write(envelope, &w)
        return w.bytes
    }

    /// Encodes a snapshot (peer entries sorted by UTF-8 bytes). Throws like the envelope overload.
    public static func encode(_ snapshot: AnySessionSyncSnapshot, limits: SessionWireLimits = .default) throws -> [UInt8] {
        var w = WireWriter(bytes: [], capacity: 128 + snapshot.state.count + 24 * snapshot.reflectedSequences.count, limits: limits)
        try write(snapshot, &w)
        return w.bytes
    }

    /// Encodes a snapshot request. Throws like the envelope overload.
    public static func encode(_ request: SessionSnapshotRequest, limits: SessionWireLimits = .default) throws -> [UInt8] {
        var w = WireWriter(bytes: [], capacity: 64, limits: limits)
        try write(request, &w)
        return w.bytes
    }

    /// Encodes any message.
    public static func encode(_ message: Message, limits: SessionWireLimits = .default) throws -> [UInt8] {
        switch message {
        case let .envelope(e): try encode(e, limits: limits)
        case let .snapshot(s): try encode(s, limits: limits)
        case let .snapshotRequest(r): try encode(r, limits: limits)
        }
    }

    /// Encodes any message at the end of `bytes` (e.g. after a frame header the caller wrote),
    /// writing into the same array. On a throw, `bytes` is left as it was.
    public static func encode(_ message: Message, appendingTo bytes: inout [UInt8], limits: SessionWireLimits = .default) throws {
        let start = bytes.count
        var w = WireWriter(bytes: bytes, capacity: 0, limits: limits)
        bytes = []
        defer { bytes = w.bytes }
        do {
            switch message {
            case let .envelope(e): try write(e, &w)
            case let .snapshot(s): try write(s, &w)
            case let .snapshotRequest(r): try write(r, &w)
            }
        } catch {
            w.bytes.removeSubrange(start...)
            throw error
        }
    }

    private static func write(_ envelope: AnySessionSyncEnvelope, _ w: inout WireWriter) throws {
        header(.envelope, &w)
        try metadata(envelope.metadata, &w)
        try w.payload(envelope.payload, field: "payload")
    }

    private static func write(_ snapshot: AnySessionSyncSnapshot, _ w: inout WireWriter) throws {
        guard snapshot.reflectedSequences.count <= w.limits.maxReflectedPeers else {
            throw SessionWireError(.limitExceeded, offset: 0, detail: "reflectedSequences has \(snapshot.reflectedSequences.count) entries, limit \(w.limits.maxReflectedPeers)")
        }
        header(.snapshot, &w)
        try metadata(snapshot.metadata, &w)
        w.varint(snapshot.revision)
        w.varint(UInt64(snapshot.reflectedSequences.count))
        let sorted = snapshot.reflectedSequences.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        for (peer, sequence) in sorted {
            try w.string(peer, field: "reflectedSequences peer id")
            w.varint(sequence)
        }
        try w.payload(snapshot.state, field: "state")
    }

    private static func write(_ request: SessionSnapshotRequest, _ w: inout WireWriter) throws {
        header(.snapshotRequest, &w)
        try w.protocolVersion(request.protocolVersion)
        w.uuid(request.sessionID)
        var flags: UInt8 = 0
        if request.featureID != nil { flags |= 1 }
        if request.targetPeerID != nil { flags |= 2 }
        if request.expectedSequence != nil { flags |= 4 }
        if request.receivedSequence != nil { flags |= 8 }
        w.byte(flags)
        try w.string(request.requestingPeerID, field: "requestingPeerID")
        if let featureID = request.featureID { try w.string(featureID, field: "featureID") }
        if let target = request.targetPeerID { try w.string(target, field: "targetPeerID") }
        if let expected = request.expectedSequence { w.varint(expected) }
        if let received = request.receivedSequence { w.varint(received) }
    }

    private static func header(_ kind: Kind, _ w: inout WireWriter) {
        w.byte(0x53)
        w.byte(0x4D)
        w.byte(formatVersion)
        w.byte(kind.rawValue)
    }

    private static func metadata(_ m: SessionSyncMetadata, _ w: inout WireWriter) throws {
        try w.protocolVersion(m.protocolVersion)
        w.uuid(m.sessionID)
        var flags: UInt8 = 0
        if m.monotonicTimestamp != nil { flags |= 1 }
        if m.acknowledgedSequence != nil { flags |= 2 }
        w.byte(flags)
        try w.string(m.featureID, field: "featureID")
        try w.string(m.sourcePeerID, field: "sourcePeerID")
        w.uuid(m.eventID)
        w.varint(m.sequence)
        try w.double(m.causalTimestamp.timeIntervalSinceReferenceDate, field: "causalTimestamp")
        if let mono = m.monotonicTimestamp { try w.double(mono, field: "monotonicTimestamp") }
        try w.string(m.payloadType, field: "payloadType")
        if let ack = m.acknowledgedSequence { w.varint(ack) }
    }
}
