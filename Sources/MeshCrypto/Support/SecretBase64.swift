/// Standard base64 (RFC 4648, with padding) for secrets, without a `String` or `Data` copy:
/// encoding writes into a caller's buffer, decoding writes straight into ``SecretBytes``.
///
/// Swift strings cannot be zeroed, so a pair key that passed through `base64EncodedString()`
/// would stay readable in freed memory; these functions keep every copy zeroable.
public enum SecretBase64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Characters of the encoding of `count` bytes.
    public static func encodedLength(of count: Int) -> Int { (count + 2) / 3 * 4 }

    /// Writes the encoding of `secret` into `output`; returns false (writing nothing) when
    /// `output` is not exactly ``encodedLength(of:)`` bytes.
    public static func encode(_ secret: SecretBytes, into output: UnsafeMutableRawBufferPointer) -> Bool {
        guard output.count == encodedLength(of: secret.count) else { return false }
        secret.withUnsafeBytes { input in
            var out = 0
            var index = 0
            while index < input.count {
                let b0 = input[index]
                let b1 = index + 1 < input.count ? input[index + 1] : 0
                let b2 = index + 2 < input.count ? input[index + 2] : 0
                output[out] = alphabet[Int(b0 >> 2)]
                output[out + 1] = alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)]
                output[out + 2] = index + 1 < input.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "=")
                output[out + 3] = index + 2 < input.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "=")
                index += 3
                out += 4
            }
        }
        return true
    }

    /// Decodes `text` (standard alphabet, padded, no whitespace) into zeroing storage; nil when
    /// it is not valid base64.
    public static func decode(_ text: UnsafeRawBufferPointer) -> SecretBytes? {
        guard text.count % 4 == 0 else { return nil }
        var padding = 0
        if text.count >= 1, text[text.count - 1] == UInt8(ascii: "=") { padding += 1 }
        if text.count >= 2, text[text.count - 2] == UInt8(ascii: "=") { padding += 1 }
        let count = text.count / 4 * 3 - padding
        for (position, character) in text.enumerated() {
            let isPadding = position >= text.count - padding
            guard isPadding || value(of: character) != nil else { return nil }
        }
        return SecretBytes(count: count) { out in
            var written = 0
            var index = 0
            while index < text.count {
                var quad: UInt32 = 0
                for offset in 0 ..< 4 {
                    quad = quad << 6 | UInt32(value(of: text[index + offset]) ?? 0)
                }
                for shift in [16, 8, 0] as [UInt32] where written < count {
                    out[written] = UInt8(truncatingIfNeeded: quad >> shift)
                    written += 1
                }
                quad = 0
                index += 4
            }
        }
    }

    private static func value(of character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A") ... UInt8(ascii: "Z"): return character - UInt8(ascii: "A")
        case UInt8(ascii: "a") ... UInt8(ascii: "z"): return character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): return character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
