#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A pairing connection driven by hand over a blocking TCP socket, to play a joiner that does
/// what an honest daemon would not (stop between messages, present a forged identity).
///
/// Wire: preamble `'S' 'M' 0x01 0x02`, then frames `length (UInt16 BE) | body`. Every call is
/// blocking with a receive timeout; run them with `offPool`.
final class RawPairingConnection: @unchecked Sendable {
    static let preamble: [UInt8] = [0x53, 0x4D, 0x01, 0x02]
    private let fd: Int32

    /// Connects to 127.0.0.1:`port`; nil when the connection fails.
    /// A connection to the node's `port`, from loopback address `source` when given.
    init?(port: Int, from source: String? = nil, receiveTimeoutMilliseconds: Int = 3000) {
        let fd = RawSocketProbe.openIdle(port: port, from: source)
        guard fd >= 0 else { return nil }
        self.fd = fd
        var timeout = timeval(tv_sec: receiveTimeoutMilliseconds / 1000, tv_usec: (receiveTimeoutMilliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Writes raw bytes (preamble, frames, or garbage).
    func write(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Writes one frame.
    func writeFrame(_ body: [UInt8]) {
        write([UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body)
    }

    /// Reads one frame; nil when the peer closed or nothing came within the timeout.
    func readFrame() -> [UInt8]? {
        guard let header = read(count: 2) else { return nil }
        return read(count: Int(header[0]) << 8 | Int(header[1]))
    }

    /// Stops sending (the daemon sees end of input) and waits until the daemon closes;
    /// returns the bytes it sent meanwhile.
    func finishAndDrain(waitMilliseconds: Int = 3000) -> Int {
        shutdown(fd, Int32(SHUT_WR))
        return drainUntilClosed(waitMilliseconds: waitMilliseconds)
    }

    /// Keeps the connection open and waits until the daemon closes it; returns the bytes it
    /// sent meanwhile (-1 when it did not close within the wait).
    func drainUntilClosed(waitMilliseconds: Int = 3000) -> Int {
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 1024)
        let deadline = Date().addingTimeInterval(Double(waitMilliseconds) / 1000)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return total }
            if n < 0 { if errno == EINTR { continue }; break }
            total += n
        }
        return -1
    }

    private func read(count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = out.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + got, count - got, 0) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            got += n
        }
        return out
    }
}
