import Foundation

/// Appends the primitives of the session wire format to a byte array. Internal.
struct WireWriter {
    var bytes: [UInt8]
    let limits: SessionWireLimits

    init(bytes: [UInt8], capacity: Int, limits: SessionWireLimits) {
        self.bytes = bytes
        self.bytes.reserveCapacity(bytes.count + capacity)
        self.limits = limits
    }

    @inline(__always)
    mutating func byte(_ value: UInt8) { bytes.append(value) }

    @inline(__always)
    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func uuid(_ value: UUID) {
        withUnsafeBytes(of: value.uuid) { bytes.append(contentsOf: $0) }
    }

    mutating func double(_ value: Double, field: String) throws {
        guard value.isFinite else { throw SessionWireError(.nonFiniteTimestamp, offset: 0, detail: "\(field) is not finite") }
        let bits = value.bitPattern.bigEndian
        withUnsafeBytes(of: bits) { bytes.append(contentsOf: $0) }
    }

    mutating func string(_ value: String, field: String) throws {
        var value = value
        try value.withUTF8 { utf8 in
            guard utf8.count <= limits.maxStringBytes else {
                throw SessionWireError(.limitExceeded, offset: 0, detail: "\(field) is \(utf8.count) bytes, limit \(limits.maxStringBytes)")
            }
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func payload(_ value: Data, field: String) throws {
        guard value.count <= limits.maxPayloadBytes else {
            throw SessionWireError(.limitExceeded, offset: 0, detail: "\(field) is \(value.count) bytes, limit \(limits.maxPayloadBytes)")
        }
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func protocolVersion(_ value: Int) throws {
        guard value >= 0 && value <= Int(Int32.max) else {
            throw SessionWireError(.valueOutOfRange, offset: 0, detail: "protocolVersion \(value) is outside 0...\(Int32.max)")
        }
        varint(UInt64(value))
    }
}
