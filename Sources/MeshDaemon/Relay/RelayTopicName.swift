/// The 32-character blinded part of a relay topic: the first 20 bytes of a keyed hash, written
/// in lower-case RFC 4648 base32 (`a`–`z`, `2`–`7`, no padding).
///
/// The alphabet has no `/`, `+`, `#` or NUL, so a name never adds a topic level or a wildcard;
/// 20 bytes (160 bits) make two different inputs collide with negligible probability.
enum RelayTopicName {
    /// Bytes of the keyed hash that make the name.
    static let byteCount = 20
    /// Characters of a name.
    static let length = 32
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    /// The name of the first ``byteCount`` bytes of `digest` (which must have at least that many).
    static func encode(_ digest: [UInt8]) -> String {
        var characters: [UInt8] = []
        characters.reserveCapacity(length)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in digest.prefix(byteCount) {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                characters.append(alphabet[Int((buffer >> UInt32(bits)) & 0x1F)])
            }
        }
        // 160 bits are exactly 32 groups of 5: nothing is left over.
        return String(decoding: characters, as: UTF8.self)
    }
}
