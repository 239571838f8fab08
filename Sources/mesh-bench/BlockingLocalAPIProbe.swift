#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import NIOCore

/// Local API round trips with a plain blocking Unix-socket client (no NIO, no Swift concurrency
/// on the client side): separates the daemon's share of a request from the client library's.
enum BlockingLocalAPIProbe {
    /// Round trips of `hello` in nanoseconds, `count` samples after 100 warm-up requests.
    static func roundTrips(socketPath: String, count: Int) throws -> [UInt64] {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("blocking probe: socket() failed") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(socketPath.utf8)) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw BenchError("blocking probe: connect failed") }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var frame = ByteBuffer()
        LocalAPIFrameEncoder.write(LocalAPIFrame(kind: .request, operation: .hello, requestID: 1, body: ByteBuffer(string: "{}")), to: &frame)
        let request = Array(frame.readableBytesView)
        var samples: [UInt64] = []
        var pending = ByteBuffer()
        var chunk = [UInt8](repeating: 0, count: 8192)
        for index in 0..<(count + 100) {
            let start = DispatchTime.now().uptimeNanoseconds
            guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
                throw BenchError("blocking probe: send failed")
            }
            while (try? LocalAPIFrameDecoder.parse(&pending)) == nil {
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { throw BenchError("blocking probe: no reply") }
                pending.writeBytes(chunk[0..<n])
            }
            if index >= 100 { samples.append(DispatchTime.now().uptimeNanoseconds &- start) }
        }
        return samples
    }
}
