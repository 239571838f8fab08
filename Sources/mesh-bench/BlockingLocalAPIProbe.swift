import Foundation
import MeshLocalAPI
import NIOCore

/// Local API round trips with a plain blocking Unix-socket client (no NIO, no Swift concurrency
/// on the client side): separates the daemon's share of a request from the client library's.
enum BlockingLocalAPIProbe {
    /// Round trips of `hello` in nanoseconds, `count` samples after 100 warm-up requests.
    static func roundTrips(socketPath: String, count: Int) throws -> [UInt64] {
        let socket = try BlockingSocket(path: socketPath)
        defer { socket.close() }
        let hello = LocalAPIFrame(kind: .request, operation: .hello, requestID: 1, body: ByteBuffer(string: "{}"))
        var samples: [UInt64] = []
        samples.reserveCapacity(count)
        for index in 0..<(count + 100) {
            let start = DispatchTime.now().uptimeNanoseconds
            try socket.write(hello)
            _ = try socket.read(until: { $0.kind != .event })
            if index >= 100 { samples.append(DispatchTime.now().uptimeNanoseconds &- start) }
        }
        return samples
    }
}
