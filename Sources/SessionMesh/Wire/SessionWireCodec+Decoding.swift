import Foundation

extension SessionWireCodec {
    /// Decodes any message from `bytes` (`[UInt8]`, `Data`, …). Throws ``SessionWireError``.
    public static func decode(_ bytes: some ContiguousBytes, limits: SessionWireLimits = .default) throws -> Message {
        try bytes.withUnsafeBytes { try decode(buffer: $0, limits: limits) }
    }

    /// Decodes any message from raw memory (e.g. a NIO `ByteBuffer`'s readable bytes).
    public static func decode(buffer: UnsafeRawBufferPointer, limits: SessionWireLimits = .default) throws -> Message {
        var r = WireReader(buffer, limits: limits)
        let kind = try header(&r)
        let message: Message
        switch kind {
        case .envelope: message = .envelope(try envelopeBody(&r))
        case .snapshot: message = .snapshot(try snapshotBody(&r))
        case .snapshotRequest: message = .snapshotRequest(try requestBody(&r))
        }
        try r.expectEnd()
        return message
    }

    /// Decodes an envelope; any other kind throws ``SessionWireError/Code/unexpectedKind``.
    public static func decodeEnvelope(_ bytes: some ContiguousBytes, limits: SessionWireLimits = .default) throws -> AnySessionSyncEnvelope {
        guard case let .envelope(e) = try decode(bytes, limits: limits) else { throw unexpected(.envelope) }
        return e
    }

    /// Reads an envelope's metadata without copying its payload out: the same checks as
    /// ``decodeEnvelope(_:limits:)`` (header, every field, the payload's length against
    /// `limits` and the bytes, nothing after it), so it throws exactly when that does (another
    /// kind of message is refused right after its header, as `unexpectedKind`), and returns what
    /// that returns as `metadata`. For code that forwards the encoded bytes and needs only the
    /// metadata (a relay, a router).
    public static func decodeEnvelopeMetadata(_ bytes: some ContiguousBytes, limits: SessionWireLimits = .default) throws -> SessionSyncMetadata {
        try bytes.withUnsafeBytes { buffer in
            var r = WireReader(buffer, limits: limits)
            guard try header(&r) == .envelope else { throw unexpected(.envelope) }
            let metadata = try metadata(&r)
            try r.skipPayload("payload")
            try r.expectEnd()
            return metadata
        }
    }

    /// Decodes a snapshot; any other kind throws ``SessionWireError/Code/unexpectedKind``.
    public static func decodeSnapshot(_ bytes: some ContiguousBytes, limits: SessionWireLimits = .default) throws -> AnySessionSyncSnapshot {
        guard case let .snapshot(s) = try decode(bytes, limits: limits) else { throw unexpected(.snapshot) }
        return s
    }

    /// Decodes a snapshot request; any other kind throws ``SessionWireError/Code/unexpectedKind``.
    public static func decodeSnapshotRequest(_ bytes: some ContiguousBytes, limits: SessionWireLimits = .default) throws -> SessionSnapshotRequest {
        guard case let .snapshotRequest(q) = try decode(bytes, limits: limits) else { throw unexpected(.snapshotRequest) }
        return q
    }

    /// Reads only the header: which kind of message `bytes` claims to be.
    public static func kind(of bytes: some ContiguousBytes) throws -> Kind {
        try bytes.withUnsafeBytes { buffer in
            var r = WireReader(buffer, limits: .default)
            return try header(&r)
        }
    }

    private static func unexpected(_ wanted: Kind) -> SessionWireError {
        SessionWireError(.unexpectedKind, offset: 3, detail: "expected a \(wanted) message")
    }

    private static func header(_ r: inout WireReader) throws -> Kind {
        try r.need(4, "header")
        guard try r.byte("magic") == 0x53, try r.byte("magic") == 0x4D else {
            throw SessionWireError(.badMagic, offset: 0, detail: "not a SessionMesh message")
        }
        let version = try r.byte("format version")
        guard version == formatVersion else {
            throw SessionWireError(.unsupportedFormatVersion, offset: 2, detail: "format version \(version), this build reads \(formatVersion)")
        }
        let raw = try r.byte("kind")
        guard let kind = Kind(rawValue: raw) else {
            throw SessionWireError(.unknownKind, offset: 3, detail: "kind \(raw) is not 1, 2 or 3")
        }
        return kind
    }

    private static func flags(_ r: inout WireReader, allowed: UInt8) throws -> UInt8 {
        let at = r.offset
        let value = try r.byte("flags")
        guard value & ~allowed == 0 else {
            throw SessionWireError(.reservedFlagsSet, offset: at, detail: String(format: "flags 0x%02x use undefined bits", value))
        }
        return value
    }

    private static func metadata(_ r: inout WireReader) throws -> SessionSyncMetadata {
        let protocolVersion = try r.protocolVersion()
        let sessionID = try r.uuid("sessionID")
        let flags = try flags(&r, allowed: 0b11)
        let featureID = try r.string("featureID")
        let sourcePeerID = try r.string("sourcePeerID")
        let eventID = try r.uuid("eventID")
        let sequence = try r.varint("sequence")
        let causal = try r.double("causalTimestamp")
        let mono = flags & 1 != 0 ? try r.double("monotonicTimestamp") : nil
        let payloadType = try r.string("payloadType")
        let ack = flags & 2 != 0 ? try r.varint("acknowledgedSequence") : nil
        return SessionSyncMetadata(
            protocolVersion: protocolVersion, sessionID: sessionID, featureID: featureID,
            sourcePeerID: sourcePeerID, eventID: eventID, sequence: sequence,
            causalTimestamp: Date(timeIntervalSinceReferenceDate: causal), monotonicTimestamp: mono,
            payloadType: payloadType, acknowledgedSequence: ack)
    }

    private static func envelopeBody(_ r: inout WireReader) throws -> AnySessionSyncEnvelope {
        let m = try metadata(&r)
        return AnySessionSyncEnvelope(metadata: m, payload: try r.payload("payload"))
    }

    private static func snapshotBody(_ r: inout WireReader) throws -> AnySessionSyncSnapshot {
        let m = try metadata(&r)
        let revision = try r.varint("revision")
        let count = try r.length("reflectedSequences count", limit: r.limits.maxReflectedPeers)
        var reflected: [String: UInt64] = [:]
        reflected.reserveCapacity(count)
        var previous: UnsafeRawBufferPointer?
        for _ in 0..<count {
            let at = r.offset
            let raw = try r.stringBytes("reflectedSequences peer id")
            if let previous, !previous.lexicographicallyPrecedes(raw) {
                throw SessionWireError(.unsortedPeers, offset: at, detail: "peer ids must be strictly ascending by UTF-8 bytes")
            }
            guard let peer = String(exactUTF8: raw) else {
                throw SessionWireError(.invalidUTF8, offset: at, detail: "reflectedSequences peer id is not valid UTF-8")
            }
            previous = raw
            reflected[peer] = try r.varint("reflectedSequences sequence")
        }
        let state = try r.payload("state")
        return AnySessionSyncSnapshot(metadata: m, revision: revision, reflectedSequences: reflected, state: state)
    }

    private static func requestBody(_ r: inout WireReader) throws -> SessionSnapshotRequest {
        let protocolVersion = try r.protocolVersion()
        let sessionID = try r.uuid("sessionID")
        let flags = try flags(&r, allowed: 0b1111)
        let requester = try r.string("requestingPeerID")
        let featureID = flags & 1 != 0 ? try r.string("featureID") : nil
        let target = flags & 2 != 0 ? try r.string("targetPeerID") : nil
        let expected = flags & 4 != 0 ? try r.varint("expectedSequence") : nil
        let received = flags & 8 != 0 ? try r.varint("receivedSequence") : nil
        return SessionSnapshotRequest(
            protocolVersion: protocolVersion, sessionID: sessionID, featureID: featureID,
            requestingPeerID: requester, targetPeerID: target,
            expectedSequence: expected, receivedSequence: received)
    }
}
