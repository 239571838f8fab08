#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SessionMesh
import Testing

/// The same daemons over IPv6 loopback: pairing, both paths, the durable queue across a restart.
@Suite("delivery between meshd processes over IPv6", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"),
       .enabled(if: IPv6Loopback.works(), "this machine has no IPv6 loopback (::1)"))
struct ProcessDeliveryIPv6Tests {
    @Test func pairingRealtimeAndTheQueueWorkOverIPv6Loopback() async throws {
        let pair = try await DaemonPair.start(listen: "[::1]:0")
        defer { pair.stopNow() }
        #expect(pair.a.listen.hasPrefix("[::1]:"), "A listens on \(pair.a.listen)")
        let watch = try WatchProcess(pair.b, feature: "demo")
        defer { watch.stopNow() }
        _ = try await watch.next(type: "attached", timeout: 10)

        let reliable = try await pair.a.meshctl(["send", "--feature", "demo", "--mode", "reliable", "over-v6"])
        #expect(reliable.status == 0, "\(reliable.output)")
        let first = try await watch.next(type: "envelope", timeout: 10)
        #expect(first["payload"] as? String == "over-v6")

        let ping = try await pair.a.meshctl(["ping", pair.idB, "--count", "5", "--json"])
        #expect(ping.status == 0, "the datagram path answers over ::1: \(ping.output)")

        // B down: A queues; B back: the item arrives once.
        try await pair.b.kill9()
        let queued = try await pair.a.meshctl(["send", "--feature", "demo", "--mode", "reliable", "while-down"])
        #expect(queued.status == 0, "\(queued.output)")
        try await pair.b.restart()
        let again = try WatchProcess(pair.b, feature: "demo")
        defer { again.stopNow() }
        var late = try await again.next(type: "envelope", timeout: 15)
        // B may die before watch's ack of the first item lands; then that item comes first again,
        // marked as a redelivery (never unmarked).
        if late["payload"] as? String == "over-v6" {
            #expect(late["redelivery"] as? Bool == true, "an unacked item comes again only as a redelivery: \(late)")
            late = try await again.next(type: "envelope", timeout: 15)
        }
        #expect(late["payload"] as? String == "while-down")
        #expect(late["redelivery"] as? Bool == false)
    }
}

/// Probes for IPv6 loopback.
enum IPv6Loopback {
    /// True when a UDP socket can bind ::1 here (containers without IPv6 skip the suite).
    static func works() -> Bool {
        let fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0 }
        }
    }
}
