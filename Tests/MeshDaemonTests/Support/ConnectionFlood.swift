#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshCore
@testable import MeshDaemon
import Synchronization

/// A flood of idle and garbage TCP connections from one loopback source address (e.g.
/// 127.0.0.2) to a daemon's port, run on its own thread until `stop()`: what a hostile host on
/// the LAN can do without any key. It keeps up to `maximumOpen` connections open, opens a new
/// one every `interval`, and counts the reply bytes it ever got (a daemon owes it none).
///
/// Kinds, in turn: idle; garbage bytes; a channel preamble alone; a channel preamble with a
/// frame of random bytes the size of a message 1 and its MAC; then pairing (kind 2) preambles:
/// alone (idle), followed by random bytes, by an empty frame, by a genuine-looking first
/// pairing message (hello) cut short, and by a whole hello with a wrong protocol version. None
/// of them is a well-formed hello, so none may count as an attempt against a live code.
/// Bytes come from `seed`.
final class ConnectionFlood: Sendable {
    struct Figures: Sendable {
        var connected = 0
        var refusedOrFailed = 0
        var closedByDaemon = 0
        var replyBytes = 0
        /// Connections that opened with a pairing preamble (kinds 4 to 8).
        var pairingPreambles = 0
        /// Of those, connections that sent a complete frame that is not a well-formed hello
        /// (an empty frame, a truncated hello, a hello of a wrong version).
        var malformedHellos = 0
    }

    /// How many payload kinds the flood cycles through.
    static let kinds = 9

    private let source: String
    private let port: UInt16
    private let maximumOpen: Int
    private let interval: Duration
    private let stopped = Atomic<Bool>(false)
    private let figures = Locked(Figures())
    private let finished = DispatchSemaphore(value: 0)
    private let seed: UInt64

    init(from source: String, to port: UInt16, maximumOpen: Int = 200, interval: Duration = .milliseconds(2), seed: UInt64) {
        self.source = source
        self.port = port
        self.maximumOpen = maximumOpen
        self.interval = interval
        self.seed = seed
    }

    /// Starts the flood on a new thread.
    func start() {
        Thread.detachNewThread { [self] in
            run()
            finished.signal()
        }
    }

    /// Stops the flood, closes every connection it holds and returns what it saw (≤ 5 s).
    func stop() async -> Figures {
        stopped.store(true, ordering: .relaxed)
        let done = self.finished
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                _ = done.wait(timeout: .now() + 5)
                continuation.resume()
            }
        }
        return figures.withLock { $0 }
    }

    private func run() {
        var random = SeededRandom(state: seed)
        var open: [Int32] = []
        var kind = 0
        let deadline = Date().addingTimeInterval(120)       // bounded even if never stopped
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopped.load(ordering: .relaxed), Date() < deadline {
            // Reap what the daemon closed (and count any byte it sent).
            open.removeAll { fd in
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n > 0 { figures.withLock { $0.replyBytes += n } }
                if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                    close(fd)
                    figures.withLock { $0.closedByDaemon += 1 }
                    return true
                }
                return false
            }
            if open.count < maximumOpen {
                if let fd = connectFromSource() {
                    figures.withLock {
                        $0.connected += 1
                        if kind >= 4 { $0.pairingPreambles += 1 }
                        if kind >= 6 { $0.malformedHellos += 1 }
                    }
                    let bytes = payload(kind: kind, random: &random)
                    kind = (kind + 1) % Self.kinds
                    if !bytes.isEmpty { _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
                    open.append(fd)
                } else {
                    figures.withLock { $0.refusedOrFailed += 1 }
                }
            }
            Thread.sleep(forTimeInterval: Double(interval.components.attoseconds) / 1e18 + Double(interval.components.seconds))
        }
        for fd in open { close(fd) }
    }

    private func payload(kind: Int, random: inout SeededRandom) -> [UInt8] {
        func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) } }
        switch kind {
        case 0: return []
        case 1: return bytes(Int.random(in: 1...300, using: &random))
        case 2: return [0x53, 0x4D, 1, 1]
        case 3: return [0x53, 0x4D, 1, 1, 0, 128] + bytes(128)
        case 4: return pairing
        case 5: return pairing + bytes(Int.random(in: 1...300, using: &random))
        case 6: return pairing + [0, 0]
        case 7:
            // A hello cut anywhere from its bare header to one byte short.
            let hello = wellFormedHello(random: &random)
            return pairing + Self.framed(Array(hello.prefix(Int.random(in: 2..<hello.count, using: &random))))
        default:
            var hello = wellFormedHello(random: &random)
            hello[0] = Bool.random(using: &random) ? PairingProtocol.version - 1 : PairingProtocol.version + 1
            return pairing + Self.framed(hello)
        }
    }

    /// The preamble of a pairing connection.
    private let pairing: [UInt8] = [0x53, 0x4D, 1, 2]

    /// A first pairing message of the right shape and associated data with random session id,
    /// share and ephemeral key: `checkHello` accepts it, so the flood only ever sends it cut
    /// short or with its version changed (a whole one would be a genuine guess at the code).
    private func wellFormedHello(random: inout SeededRandom) -> [UInt8] {
        func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) } }
        return PairingHello(sessionID: bytes(PairingProtocol.sessionIDBytes), share: bytes(PairingProtocol.shareBytes),
                            associatedData: PairingProtocol.joinerAssociatedData,
                            ephemeral: bytes(PairingProtocol.ephemeralBytes)).encoded()
    }

    /// `len(2, BE) | body`, as the daemons frame every pre-channel message.
    private static func framed(_ body: [UInt8]) -> [UInt8] {
        [UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    private func connectFromSource() -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(port.bigEndian)
        remote.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let connected = bound == 0 && withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
        guard connected else {
            close(fd)
            return nil
        }
        return fd
    }
}
