#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The raw loopback floor: UDP datagrams of the same size bounced between two sockets on
/// 127.0.0.1 by two threads, timed the same way as the delivery path (monotonic clock, one
/// sample per message). Reports round trips; one way is about half.
enum LoopbackUDPProbe {
    /// Round-trip times in nanoseconds, `count` samples after `warmup`.
    static func roundTrips(count: Int, warmup: Int, payloadBytes: Int) throws -> [UInt64] {
        let a = try bound()
        let b = try bound()
        defer { close(a.fd); close(b.fd) }
        let echo = Thread {
            var buffer = [UInt8](repeating: 0, count: 2048)
            var from = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            for _ in 0..<(count + warmup) {
                let n = buffer.withUnsafeMutableBytes { raw in
                    withUnsafeMutablePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(b.fd, raw.baseAddress, raw.count, 0, $0, &length) }
                    }
                }
                guard n > 0 else { return }
                _ = buffer.withUnsafeBytes { raw in
                    withUnsafePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(b.fd, raw.baseAddress, n, 0, $0, length) }
                    }
                }
            }
        }
        echo.start()
        var samples: [UInt64] = []
        samples.reserveCapacity(count)
        var message = [UInt8](repeating: 0x42, count: payloadBytes)
        var reply = [UInt8](repeating: 0, count: 2048)
        var target = b.address
        for index in 0..<(count + warmup) {
            let start = DispatchTime.now().uptimeNanoseconds
            _ = message.withUnsafeMutableBytes { raw in
                withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(a.fd, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            }
            let n = reply.withUnsafeMutableBytes { recv(a.fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw BenchError("raw UDP probe: no echo (timeout)") }
            if index >= warmup { samples.append(DispatchTime.now().uptimeNanoseconds - start) }
        }
        return samples
    }

    private static func bound() throws -> (fd: Int32, address: sockaddr_in) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("raw UDP probe: socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { close(fd); throw BenchError("raw UDP probe: bind failed") }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return (fd, address)
    }
}
