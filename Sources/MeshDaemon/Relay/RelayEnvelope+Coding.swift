extension RelayEnvelope {
    /// The message's bytes, padded as `padding` says. Nil when the payload breaks the kind's
    /// rules (see ``RelayEnvelope``): a caller bug, never sent.
    func encode(padding: RelayPadding = .none) -> [UInt8]? {
        guard Self.isValid(kind: kind, pathID: pathID, sequence: sequence, payloadCount: payload.count) else {
            return nil
        }
        let unpadded = Self.headerSize + payload.count
        let total = padding.size(for: unpadded)
        var writer = WireWriter(capacity: total)
        writer.u8(Self.version)
        writer.u8(kind.rawValue)
        writer.u64(pathID.rawValue)
        writer.u64(sequence)
        writer.u16(UInt16(payload.count))
        writer.raw(payload)
        var bytes = writer.bytes
        bytes.append(contentsOf: repeatElement(0, count: total - unpadded))
        return bytes
    }

    /// Parses one relay message. Strict: another version, an unknown kind, a payload that breaks
    /// its kind's rules, a length past the end, or padding that is not all zero throw.
    init(decoding bytes: [UInt8]) throws(WireFormatError) {
        guard bytes.count <= Self.maximumSize else { throw WireFormatError(what: "relay message (too large)") }
        var reader = WireReader(bytes)
        guard try reader.u8("relay message version") == Self.version else {
            throw WireFormatError(what: "relay message (unsupported version)")
        }
        guard let kind = Kind(rawValue: try reader.u8("relay message kind")) else {
            throw WireFormatError(what: "relay message (unknown kind)")
        }
        let pathID = RelayPathID(rawValue: try reader.u64("relay path ID"))
        let sequence = try reader.u64("relay sequence")
        let length = Int(try reader.u16("relay payload length"))
        let payload = try reader.take(length, "relay payload")
        guard Self.isValid(kind: kind, pathID: pathID, sequence: sequence, payloadCount: length) else {
            throw WireFormatError(what: "relay message (fields do not fit its kind)")
        }
        let padding = reader.rest()
        guard padding.allSatisfy({ $0 == 0 }) else { throw WireFormatError(what: "relay padding (not zero)") }
        self.init(kind: kind, pathID: pathID, sequence: sequence, payload: payload)
    }

    /// The per-kind rules: stream data carries 1…maximumPayload bytes on a path, a close none;
    /// the unnumbered kinds carry 1…maximumPayload bytes outside any path.
    static func isValid(kind: Kind, pathID: RelayPathID, sequence: UInt64, payloadCount: Int) -> Bool {
        guard payloadCount <= maximumPayload else { return false }
        switch kind {
        case .streamData: return pathID != .none && payloadCount > 0
        case .streamClose: return pathID != .none && payloadCount == 0
        case .datagram, .mailboxItem, .mailboxAck, .mailboxSnapshot: return pathID == .none && sequence == 0 && payloadCount > 0
        }
    }
}
