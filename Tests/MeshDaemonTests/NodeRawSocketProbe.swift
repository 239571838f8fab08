#if canImport(Glibc)
import Glibc
#endif

/// Plain BSD sockets, to talk to a node the way an attacker would and count reply bytes.
enum RawSocketProbe {
    /// Connects to 127.0.0.1:`port` over TCP, sends `bytes`, and returns how many bytes come
    /// back before the peer closes or `waitMilliseconds` pass.
    static func tcpReplyBytes(port: Int, sending bytes: [UInt8], waitMilliseconds: Int = 500) -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        defer { close(fd) }
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return -1 }
        setTimeout(fd, milliseconds: waitMilliseconds)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return drain(fd)
    }

    /// Sends one UDP datagram to 127.0.0.1:`port` and returns how many bytes come back
    /// within `waitMilliseconds`.
    static func udpReplyBytes(port: Int, sending bytes: [UInt8], waitMilliseconds: Int = 300) -> Int {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        defer { close(fd) }
        var address = loopback(port: port)
        setTimeout(fd, milliseconds: waitMilliseconds)
        _ = bytes.withUnsafeBytes { payload in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, payload.baseAddress, payload.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        return drain(fd)
    }

    /// Opens a TCP connection to 127.0.0.1:`port` and returns its descriptor (-1 on failure).
    static func openIdle(port: Int, from source: String? = nil) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return -1 }
        if let source {
            // Another loopback address (127.0.0.2, …): the node sees another source.
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                return -1
            }
        }
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return -1
        }
        return fd
    }

    /// Reads until the peer closes or `waitMilliseconds` pass; closes `fd`; returns the bytes read.
    static func drainAndClose(_ fd: Int32, waitMilliseconds: Int) -> Int {
        defer { close(fd) }
        setTimeout(fd, milliseconds: waitMilliseconds)
        return drain(fd)
    }

    private static func drain(_ fd: Int32) -> Int {
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<64 {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }      // 0: closed; -1: timeout (no reply)
            total += n
        }
        return total
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    private static func setTimeout(_ fd: Int32, milliseconds: Int) {
        var timeout = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }
}

import Dispatch

/// Runs a blocking probe on a Dispatch thread, never on Swift's cooperative pool (which has
/// one thread per core here: blocking it would stall the nodes under test).
func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(returning: body()) }
    }
}
