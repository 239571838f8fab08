import Foundation

/// Reads the primitives of the session wire format from a byte buffer, bounds-checked; every
/// failure is a ``SessionWireError``, never a trap. Internal.
struct WireReader {
    let buffer: UnsafeRawBufferPointer
    let limits: SessionWireLimits
    var offset = 0

    init(_ buffer: UnsafeRawBufferPointer, limits: SessionWireLimits) {
        self.buffer = buffer
        self.limits = limits
    }

    var remaining: Int { buffer.count - offset }

    @inline(__always)
    mutating func need(_ n: Int, _ field: String) throws {
        guard n <= remaining else {
            throw SessionWireError(.truncated, offset: offset, detail: "\(field) needs \(n) bytes, \(remaining) left")
        }
    }

    @inline(__always)
    mutating func byte(_ field: String) throws -> UInt8 {
        try need(1, field)
        defer { offset += 1 }
        return buffer[offset]
    }

    /// Unsigned LEB128, minimal form only, at most 10 bytes, at most 2^64−1.
    mutating func varint(_ field: String) throws -> UInt64 {
        let start = offset
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard offset < buffer.count else {
                throw SessionWireError(.truncated, offset: start, detail: "\(field) varint runs past the end")
            }
            let b = buffer[offset]
            offset += 1
            let chunk = UInt64(b & 0x7F)
            if shift == 63 && chunk > 1 {
                throw SessionWireError(.malformedVarint, offset: start, detail: "\(field) exceeds 2^64-1")
            }
            result |= chunk << shift
            if b & 0x80 == 0 {
                if b == 0 && offset - start > 1 {
                    throw SessionWireError(.malformedVarint, offset: start, detail: "\(field) varint is not minimal")
                }
                return result
            }
            shift += 7
            if shift > 63 {
                throw SessionWireError(.malformedVarint, offset: start, detail: "\(field) varint longer than 10 bytes")
            }
        }
    }

    mutating func length(_ field: String, limit: Int) throws -> Int {
        let start = offset
        let value = try varint(field)
        guard value <= UInt64(max(0, limit)) else {
            throw SessionWireError(.limitExceeded, offset: start, detail: "\(field) length \(value) exceeds limit \(limit)")
        }
        return Int(value)
    }

    mutating func uuid(_ field: String) throws -> UUID {
        try need(16, field)
        let b = UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + 16])
        offset += 16
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    mutating func double(_ field: String) throws -> Double {
        try need(8, field)
        var bits: UInt64 = 0
        for i in 0..<8 { bits = bits << 8 | UInt64(buffer[offset + i]) }
        let value = Double(bitPattern: bits)
        guard value.isFinite else {
            throw SessionWireError(.nonFiniteTimestamp, offset: offset, detail: "\(field) is not finite")
        }
        offset += 8
        return value
    }

    /// The raw bytes of a length-prefixed string, validated as UTF-8 by `string(_:)`.
    mutating func stringBytes(_ field: String) throws -> UnsafeRawBufferPointer {
        let count = try length(field, limit: limits.maxStringBytes)
        try need(count, field)
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count])
    }

    mutating func string(_ field: String) throws -> String {
        let start = offset
        let raw = try stringBytes(field)
        guard let value = String(exactUTF8: raw) else {
            throw SessionWireError(.invalidUTF8, offset: start, detail: "\(field) is not valid UTF-8")
        }
        return value
    }

    mutating func payload(_ field: String) throws -> Data {
        let count = try length(field, limit: limits.maxPayloadBytes)
        try need(count, field)
        defer { offset += count }
        return Data(UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count]))
    }

    /// Checks and passes over a payload as `payload(_:)` reads it, without copying it.
    mutating func skipPayload(_ field: String) throws {
        let count = try length(field, limit: limits.maxPayloadBytes)
        try need(count, field)
        offset += count
    }

    mutating func protocolVersion() throws -> Int {
        let start = offset
        let value = try varint("protocolVersion")
        guard value <= UInt64(Int32.max) else {
            throw SessionWireError(.valueOutOfRange, offset: start, detail: "protocolVersion \(value) exceeds \(Int32.max)")
        }
        return Int(value)
    }

    func expectEnd() throws {
        guard remaining == 0 else {
            throw SessionWireError(.trailingBytes, offset: offset, detail: "\(remaining) bytes after the end of the message")
        }
    }
}
