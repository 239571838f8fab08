/// A device's fingerprint in a form people read aloud and compare: 8 groups of 7 base32
/// characters, e.g. `MFZWI3D-BONSGYC-...`.
///
/// The ID is the first 240 bits of SHA-256 of the device's static X25519 public key (derived in
/// MeshCrypto, `DeviceID(publicKey:)`; this module has no crypto). Each group
/// holds 6 data characters and one check character, so ``parse(_:)`` catches one mistyped
/// character or two swapped characters and says which group is wrong. Equal IDs mean equal keys
/// (up to a 2⁻²⁴⁰ chance). Codable as its string form.
public struct DeviceID: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    package static let byteCount = 30
    static let groupCount = 8
    static let dataPerGroup = 6
    static let codec = Base32Check.rfc4648

    /// The 30 fingerprint bytes.
    public let bytes: [UInt8]

    /// An ID from its 30 fingerprint bytes. MeshCrypto's `DeviceID(publicKey:)` derives them
    /// from a key; nothing else makes them.
    package init(fingerprint: [UInt8]) { bytes = fingerprint }

    /// Parses the grouped form, tolerating lower case, missing or extra dashes and spaces, and
    /// `0`/`1`/`8` typed for `O`/`I`/`B`.
    /// - Throws: ``DeviceIDError`` naming the group with the typo, the bad character, or the
    ///   expected length.
    public static func parse(_ text: String) throws -> DeviceID {
        let characters = Base32Check.stripSeparators(text)
        let expected = groupCount * (dataPerGroup + 1)
        guard characters.count == expected else {
            throw DeviceIDError("a device ID has \(expected) characters in \(groupCount) groups of 7; got \(characters.count)")
        }
        var data: [UInt8] = []
        for group in 0..<groupCount {
            let start = group * (dataPerGroup + 1)
            var values: [UInt8] = []
            for (offset, character) in characters[start..<(start + dataPerGroup + 1)].enumerated() {
                guard let value = codec.value(of: character) else {
                    throw DeviceIDError("group \(group + 1), character \(offset + 1) ('\(character)') is not A–Z or 2–7")
                }
                values.append(value)
            }
            let check = values.removeLast()
            guard Base32Check.checkValue(values, salt: UInt8(group)) == check else {
                let shown = String(characters[start..<(start + dataPerGroup + 1)])
                throw DeviceIDError("group \(group + 1) (\(shown.uppercased())) has a typo: its check character does not match")
            }
            data += values
        }
        return DeviceID(fingerprint: Base32Check.bytes(fromFiveBitValues: data))
    }

    /// Hashes the fingerprint's first 8 bytes as one word. They are SHA-256 output, as evenly
    /// spread as the whole, and IDs key the daemons' hot dictionaries (several lookups per
    /// message): one word costs the seeded hasher a fraction of 30 bytes. Equal IDs have equal
    /// bytes, so equal hashes.
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { raw in
            if raw.count >= 8 {
                hasher.combine(raw.loadUnaligned(as: UInt64.self))
            } else {
                hasher.combine(bytes: raw)
            }
        }
    }

    /// The full grouped form people read aloud and compare.
    public var description: String { groups.joined(separator: "-") }

    /// The first group: enough to tell your own few devices apart on screen, not to authenticate.
    public var short: String { groups[0] }

    private var groups: [String] {
        let values = Base32Check.fiveBitValues(bytes)
        return (0..<Self.groupCount).map { group in
            let data = Array(values[(group * Self.dataPerGroup)..<((group + 1) * Self.dataPerGroup)])
            let check = Base32Check.checkValue(data, salt: UInt8(group))
            return String((data + [check]).map { Self.codec.symbol($0) })
        }
    }

    /// Orders by fingerprint bytes (a stable order for tie-breaks, e.g. who initiates).
    public static func < (lhs: DeviceID, rhs: DeviceID) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    /// Decodes from the grouped string form; a typo is a decoding error.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        self = try Self.parse(try container.decode(String.self))
    }

    /// Encodes as the grouped string form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
