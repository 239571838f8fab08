import Foundation

/// The wire digest and the wire debug print (`MESH_SIM_DEBUG_WIRE`).
extension SimulatedNetwork {
    /// `MESH_SIM_DEBUG_WIRE` set: every message sent is printed (`describe`), so the runs of two
    /// processes whose wire digests differ can be compared line by line.
    static let debugWire = ProcessInfo.processInfo.environment["MESH_SIM_DEBUG_WIRE"] != nil

    /// `wire @<virtual ns> d<from>→d<to> <path> #<connection> <count> bytes: <the first 48, hex>`
    /// (`d<N>` for the node count: a datagram to an address nobody holds).
    static func describe(from: Int, to: Int, path: NetworkPath, connection: UInt64, bytes: [UInt8], at time: UInt64) -> String {
        let hex = bytes.prefix(48).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
        return "wire @\(time) d\(from)→d\(to) \(path) #\(connection) \(bytes.count) bytes: \(hex)\(bytes.count > 48 ? " …" : "")"
    }

    /// Folds one sent message into `wireDigest`.
    func digest(from: Int, to: Int, path: NetworkPath, connection: UInt64, bytes: [UInt8]) {
        var hash = wireDigest
        func mix(_ value: UInt64) {
            for shift in stride(from: 0, to: 64, by: 8) { hash = (hash ^ (value >> UInt64(shift) & 0xFF)) &* 0x100_0000_01b3 }
        }
        mix(clock.nanoseconds)
        mix(UInt64(from) << 32 | UInt64(to) << 1 | (path == .stream ? 1 : 0))
        mix(connection)
        mix(UInt64(bytes.count))
        bytes.withUnsafeBufferPointer { buffer in
            for byte in buffer { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        }
        wireDigest = hash
    }
}
