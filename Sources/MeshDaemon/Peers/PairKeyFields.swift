import MeshCrypto

/// Moves pair keys between the bytes of `paired-devices.json` and ``SecretBytes`` without ever
/// holding their base64 text in a `String` (which cannot be zeroed).
///
/// Saving: the JSON is encoded with a random placeholder of the right length in each
/// `pairKey`, then ``splice(_:placeholders:into:)`` writes each key's base64 over its
/// placeholder, in the one byte buffer that is written to disk and then zeroed.
/// Loading: ``extract(from:)`` finds every `"pairKey": "…"` member, decodes its value into
/// `SecretBytes` and overwrites the value in the buffer with `A`s before `JSONDecoder` sees it.
/// Both are pure functions of the bytes.
enum PairKeyFields {
    /// Longest value accepted (a 32-byte key is 44 characters; escapes make it longer).
    static let maximumValueBytes = 128
    private static let name = Array("\"pairKey\"".utf8)

    /// A placeholder of `SecretBase64.encodedLength(of: 32)` characters for device `index`: its
    /// random part makes it unlike anything else in the file (a device name, say).
    static func placeholder(index: Int, random: [UInt8]) -> String {
        let hex = random.map { byte in String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }.joined()
        let text = "PK\(index)X" + hex
        let length = SecretBase64.encodedLength(of: 32)
        return String(text.prefix(length)).padding(toLength: length, withPad: "X", startingAt: 0)
    }

    /// Overwrites each `"placeholder"` in `json` with the base64 of the key at the same index.
    /// False when a placeholder is not found exactly once or has the wrong length.
    static func splice(_ keys: [SecretBytes], placeholders: [String], into json: inout [UInt8]) -> Bool {
        guard keys.count == placeholders.count else { return false }
        for (key, placeholder) in zip(keys, placeholders) {
            let needle = Array(("\"" + placeholder + "\"").utf8)
            let matches = occurrences(of: needle, in: json)
            guard matches.count == 1, let start = matches.first,
                  needle.count - 2 == SecretBase64.encodedLength(of: key.count) else { return false }
            let written = json.withUnsafeMutableBytes { buffer in
                SecretBase64.encode(key, into: UnsafeMutableRawBufferPointer(rebasing: buffer[(start + 1) ..< (start + needle.count - 1)]))
            }
            guard written else { return false }
        }
        return true
    }

    /// Every `pairKey` member's value in document order, decoded (nil: not valid base64), with
    /// each value in `json` overwritten by `A`s. Only members (a `"pairKey"` after `{` or `,`
    /// and followed by `:`) count; the text of names or other values never matches.
    static func extract(from json: inout [UInt8]) -> [SecretBytes?] {
        var keys: [SecretBytes?] = []
        var index = 0
        while let start = nextName(in: json, from: index) {
            var cursor = skipSpace(json, start + name.count)
            guard cursor < json.count, json[cursor] == UInt8(ascii: ":") else { index = start + 1; continue }
            cursor = skipSpace(json, cursor + 1)
            guard cursor < json.count, json[cursor] == UInt8(ascii: "\"") else { index = start + 1; continue }
            let valueStart = cursor + 1
            var value: [UInt8] = []
            value.reserveCapacity(maximumValueBytes)
            var valid = true
            var position = valueStart
            while position < json.count, json[position] != UInt8(ascii: "\"") {
                if json[position] == UInt8(ascii: "\\") {
                    // JSONEncoder writes "/" as "\/"; base64 needs no other escape.
                    if position + 1 < json.count, json[position + 1] == UInt8(ascii: "/") {
                        if value.count < maximumValueBytes { value.append(UInt8(ascii: "/")) } else { valid = false }
                    } else {
                        valid = false
                    }
                    position += 2
                    continue
                }
                if value.count < maximumValueBytes { value.append(json[position]) } else { valid = false }
                position += 1
            }
            let end = min(position, json.count)
            keys.append(valid ? value.withUnsafeBytes { SecretBase64.decode($0) } : nil)
            PairingSupport.zero(&value)
            for i in valueStart ..< end { json[i] = UInt8(ascii: "A") }
            index = end
        }
        return keys
    }

    /// The next `"pairKey"` at or after `from` whose previous non-space byte is `{` or `,`.
    private static func nextName(in json: [UInt8], from: Int) -> Int? {
        var candidate = from
        while let found = occurrences(of: name, in: json, from: candidate, first: true).first {
            var before = found - 1
            while before >= 0, isSpace(json[before]) { before -= 1 }
            if before >= 0, json[before] == UInt8(ascii: "{") || json[before] == UInt8(ascii: ",") { return found }
            candidate = found + 1
        }
        return nil
    }

    private static func occurrences(of needle: [UInt8], in haystack: [UInt8], from: Int = 0, first: Bool = false) -> [Int] {
        var found: [Int] = []
        guard !needle.isEmpty, haystack.count >= needle.count, from <= haystack.count - needle.count else { return found }
        var index = from
        while index <= haystack.count - needle.count {
            if haystack[index] == needle[0], haystack[index ..< index + needle.count].elementsEqual(needle) {
                found.append(index)
                if first { return found }
                index += needle.count
            } else {
                index += 1
            }
        }
        return found
    }

    private static func skipSpace(_ json: [UInt8], _ from: Int) -> Int {
        var index = from
        while index < json.count, isSpace(json[index]) { index += 1 }
        return index
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
