/// A strict cursor over one pairing message: every read names its field, so a short or long
/// message fails with an error that says exactly what was missing or left over.
struct PairingWireReader {
    private let bytes: [UInt8]
    private var offset = 0
    private let message: PairingMessageType

    /// Checks the size limit, version and type, and positions the cursor after the header.
    init(_ bytes: [UInt8], expecting message: PairingMessageType) throws(PairingError) {
        self.bytes = bytes
        self.message = message
        guard bytes.count <= PairingProtocol.maximumMessageSize else {
            throw .malformed("\(message): \(bytes.count) bytes exceeds the limit of \(PairingProtocol.maximumMessageSize)")
        }
        guard !bytes.isEmpty else { throw .malformed("\(message): empty message") }
        guard bytes[0] == PairingProtocol.version else { throw .unsupportedVersion }
        guard bytes.count >= 2 else { throw .malformed("\(message): truncated before the message type") }
        guard bytes[1] == message.rawValue else {
            let got = PairingMessageType(rawValue: bytes[1]).map(\.description) ?? "unknown type \(bytes[1])"
            throw .protocolViolation("expected \(message), got \(got)")
        }
        offset = 2
    }

    /// Reads exactly `count` bytes of `field`.
    mutating func read(_ count: Int, _ field: String) throws(PairingError) -> [UInt8] {
        guard count >= 0, bytes.count - offset >= count else {
            throw .malformed("\(message): truncated in \(field) (needs \(count) bytes, \(bytes.count - offset) left)")
        }
        let value = Array(bytes[offset ..< offset + count])
        offset += count
        return value
    }

    /// Reads a one-byte length, checks it against `limit`, then reads that many bytes.
    mutating func readShortField(_ field: String, limit: Int) throws(PairingError) -> [UInt8] {
        let length = Int(try read(1, "\(field) length")[0])
        guard length <= limit else {
            throw .malformed("\(message): \(field) length \(length) exceeds \(limit)")
        }
        return try read(length, field)
    }

    /// Insists that nothing follows the last field.
    func finish() throws(PairingError) {
        guard offset == bytes.count else {
            throw .malformed("\(message): \(bytes.count - offset) unexpected bytes after the last field")
        }
    }

    /// Header bytes shared by every message.
    static func header(_ type: PairingMessageType) -> [UInt8] {
        [PairingProtocol.version, type.rawValue]
    }
}
