/// Big-endian byte writer for the daemon-to-daemon wire formats.
struct WireWriter: Sendable {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 32) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) { bytes.append(UInt8(value >> 8)); bytes.append(UInt8(value & 0xff)) }
    mutating func u32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((value >> UInt32(shift)) & 0xff)) }
    }
    mutating func u64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((value >> UInt64(shift)) & 0xff)) }
    }
    mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }
    mutating func raw(_ value: [UInt8]) { bytes.append(contentsOf: value) }
    /// Appends a slice (no intermediate array).
    mutating func raw(_ value: ArraySlice<UInt8>) { bytes.append(contentsOf: value) }
    /// Appends raw memory (no intermediate array).
    mutating func raw(_ value: UnsafeRawBufferPointer) { bytes.append(contentsOf: value) }
}

/// Big-endian byte reader that throws (never traps) on short or malformed input.
struct WireReader: Sendable {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func u8(_ what: String) throws(WireFormatError) -> UInt8 {
        guard remaining >= 1 else { throw WireFormatError(what: what) }
        defer { offset += 1 }
        return bytes[offset]
    }
    mutating func u16(_ what: String) throws(WireFormatError) -> UInt16 {
        let hi = try u8(what), lo = try u8(what)
        return UInt16(hi) << 8 | UInt16(lo)
    }
    mutating func u32(_ what: String) throws(WireFormatError) -> UInt32 {
        guard remaining >= 4 else { throw WireFormatError(what: what) }
        var value: UInt32 = 0
        for _ in 0..<4 { value = value << 8 | UInt32(bytes[offset]); offset += 1 }
        return value
    }
    mutating func u64(_ what: String) throws(WireFormatError) -> UInt64 {
        guard remaining >= 8 else { throw WireFormatError(what: what) }
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(bytes[offset]); offset += 1 }
        return value
    }
    mutating func i64(_ what: String) throws(WireFormatError) -> Int64 { Int64(bitPattern: try u64(what)) }
    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }
    func expectEnd(_ what: String) throws(WireFormatError) {
        guard remaining == 0 else { throw WireFormatError(what: "trailing bytes after \(what)") }
    }
}

/// A daemon-to-daemon message that could not be parsed. Only logged at trace level; the
/// sender gets no reply (silence).
public struct WireFormatError: Error, CustomStringConvertible, Equatable {
    /// The field or message that was short or malformed.
    public var what: String
    public var description: String { "malformed or truncated \(what)" }
}

extension WireReader {
    /// The next `count` bytes (delivery protocol payloads); throws when fewer remain.
    mutating func take(_ count: Int, _ what: String) throws(WireFormatError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw WireFormatError(what: what) }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// Lends the next `count` bytes to `body` without copying them, then skips them; throws
    /// when fewer remain.
    mutating func borrow<T>(_ count: Int, _ what: String,
                            _ body: (UnsafeRawBufferPointer) throws(WireFormatError) -> T) throws(WireFormatError) -> T {
        guard count >= 0, remaining >= count else { throw WireFormatError(what: what) }
        let start = offset
        offset += count
        let result: Result<T, WireFormatError> = bytes.withUnsafeBytes { raw in
            do throws(WireFormatError) { return .success(try body(UnsafeRawBufferPointer(rebasing: raw[start..<(start + count)]))) }
            catch { return .failure(error) }
        }
        return try result.get()
    }
}
