/// Reads a fuzz input as a sequence of choices and length-prefixed records, so one input can
/// describe several messages (a record is a one-byte length, or with the top bit set a two-byte
/// length, followed by that many bytes; a length beyond the input takes what is left).
struct FuzzInput {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isEmpty: Bool { offset >= bytes.count }

    /// The next byte, or 0 past the end.
    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The next big-endian 64-bit value (missing bytes read as 0).
    mutating func u64() -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(byte()) }
        return value
    }

    /// The next record.
    mutating func record() -> [UInt8] {
        var length = Int(byte())
        if length & 0x80 != 0 { length = (length & 0x7F) << 8 | Int(byte()) }
        let end = min(bytes.count, offset + length)
        defer { offset = end }
        return Array(bytes[min(offset, end)..<end])
    }

    /// Everything not read yet.
    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return offset < bytes.count ? Array(bytes[offset...]) : []
    }
}

/// A harness's own check failed: report it the way libFuzzer reports a crash (the input is saved).
func fuzzFailure(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError("fuzz property violated: \(message)", file: file, line: line)
}
