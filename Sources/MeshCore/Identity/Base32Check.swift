/// Base32 symbols with a GF(32) check symbol, for identifiers people type and read aloud.
///
/// A group of data symbols `v₀…vₙ₋₁` gets the check symbol `c = salt ⊕ Σ αⁱ⁺¹·vᵢ` in GF(2⁵)
/// (α a primitive element, n < 31). Every weight is distinct and non-zero, so the check catches
/// any single mistyped symbol and any two swapped symbols (adjacent or not, check included).
/// A plain mod-32 checksum cannot do both: its weights would have to be odd and differ by odd
/// amounts at once.
package struct Base32Check: Sendable {
    /// The 32 symbols, in value order.
    let alphabet: [Character]
    /// Extra spellings accepted on input (e.g. `0` for `O`), already upper-case.
    let aliases: [Character: Character]

    /// RFC 4648 base32 (A–Z, 2–7), as Syncthing device IDs use; 0/1/8 read as O/I/B.
    package static let rfc4648 = Base32Check(alphabet: Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),
                                     aliases: ["0": "O", "1": "I", "8": "B"])
    /// Crockford base32 (no I, L, O, U); I/L read as 1, O as 0.
    package static let crockford = Base32Check(alphabet: Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ"),
                                       aliases: ["I": "1", "L": "1", "O": "0"])

    /// The value of `character` (case-insensitive, aliases applied), or nil.
    package func value(of character: Character) -> UInt8? {
        // Some characters upper-case to several ("ß" → "SS"); none of those is a symbol.
        let uppercased = character.uppercased()
        guard uppercased.count == 1, let upper = uppercased.first else { return nil }
        let canonical = aliases[upper] ?? upper
        guard let index = alphabet.firstIndex(of: canonical) else { return nil }
        return UInt8(index)
    }

    /// The symbol for `value` (0…31).
    package func symbol(_ value: UInt8) -> Character { alphabet[Int(value & 31)] }

    /// The check value of `values` (each 0…31, fewer than 31 of them) with a per-use `salt`.
    package static func checkValue(_ values: [UInt8], salt: UInt8 = 0) -> UInt8 {
        var sum = salt & 31
        var weight: UInt8 = 2  // α¹
        for value in values {
            sum ^= multiply(weight, value & 31)
            weight = multiply(weight, 2)
        }
        return sum
    }

    /// Multiplication in GF(2⁵) modulo the primitive polynomial x⁵ + x² + 1.
    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        var a = a, b = b, product: UInt8 = 0
        for _ in 0..<5 {
            if b & 1 != 0 { product ^= a }
            b >>= 1
            a <<= 1
            if a & 0x20 != 0 { a ^= 0x25 }
        }
        return product & 31
    }

    /// Splits `bytes` into 5-bit values, most significant bit first (`bytes.count * 8` must be a
    /// multiple of 5 for a lossless round trip).
    package static func fiveBitValues(_ bytes: [UInt8]) -> [UInt8] {
        var values: [UInt8] = []
        var buffer: UInt32 = 0, bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                values.append(UInt8((buffer >> UInt32(bits)) & 31))
            }
        }
        if bits > 0 { values.append(UInt8((buffer << UInt32(5 - bits)) & 31)) }
        return values
    }

    /// The inverse of ``fiveBitValues(_:)`` for whole bytes.
    package static func bytes(fromFiveBitValues values: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer: UInt32 = 0, bits = 0
        for value in values {
            buffer = (buffer << 5) | UInt32(value & 31)
            bits += 5
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8((buffer >> UInt32(bits)) & 0xFF))
            }
        }
        return bytes
    }

    /// Removes the separators people type between groups (dashes, spaces, tabs, newlines).
    package static func stripSeparators(_ text: String) -> [Character] {
        text.filter { $0 != "-" && $0 != " " && $0 != "\t" && $0 != "\n" && $0 != "\r" && $0 != "_" }.map { $0 }
    }
}
