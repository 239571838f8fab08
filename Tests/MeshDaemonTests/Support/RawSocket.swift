#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshLocalAPI
import NIOCore

/// A plain blocking Unix-socket client for sending arbitrary bytes and reading frames with a
/// deadline, as a misbehaving client would.
final class RawSocket: @unchecked Sendable {
    let fd: Int32
    private var pending = ByteBuffer()

    init(path: String, receiveTimeout seconds: Int = 5) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Half-closes: no more bytes from this side (`shutdown(SHUT_WR)`).
    func shutdownWrite() { _ = shutdown(fd, Int32(SHUT_WR)) }

    /// Makes writes non-blocking (for a client that floods without reading).
    func setNonBlocking() {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// Writes all of `bytes`; returns how many were written before the socket would block.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Int {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            sent += n
        }
        return sent
    }

    func send(_ frame: LocalAPIFrame) {
        var buffer = ByteBuffer()
        LocalAPIFrameEncoder.write(frame, to: &buffer)
        send(Array(buffer.readableBytesView))
    }

    /// Reads one frame off the cooperative pool, or nil on EOF / timeout.
    func readFrame() async throws -> LocalAPIFrame? {
        try await blocking { self.readFrameNow() }
    }

    /// Reads up to `count` frames off the cooperative pool, stopping early at EOF / timeout.
    func readFrames(_ count: Int) async throws -> [LocalAPIFrame] {
        try await blocking {
            var frames: [LocalAPIFrame] = []
            while frames.count < count, let frame = self.readFrameNow() { frames.append(frame) }
            return frames
        }
    }

    /// Whether the peer closes the connection within the receive timeout (off the pool).
    func closesSoon() async throws -> Bool {
        try await blocking { self.closesSoonNow() }
    }

    private func readFrameNow() -> LocalAPIFrame? {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            if let frame = try? LocalAPIFrameDecoder.parse(&pending, maximumBodyLength: 16 << 20) { return frame }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return nil }
            pending.writeBytes(chunk[0..<n])
        }
    }

    /// True when the daemon closes the connection within 10 s (a receive timeout is waited
    /// out again until then: one timeout alone was too short on a loaded machine).
    private func closesSoonNow() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(10)
        for _ in 0..<1000 {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR), Date() < deadline { continue }
                return errno == ECONNRESET
            }
        }
        return false
    }
}

extension LocalAPIFrame {
    /// A request with a JSON body.
    static func request(_ operation: LocalAPIOperation, id: UInt32, json: String = "{}") -> LocalAPIFrame {
        LocalAPIFrame(kind: .request, operation: operation, requestID: id, body: ByteBuffer(string: json))
    }

    /// The error body of an error frame, if it is one.
    var errorBody: LocalAPIErrorBody? {
        guard kind == .error else { return nil }
        return try? LocalAPIJSON.decode(LocalAPIErrorBody.self, from: body, operation: operation)
    }
}
