#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshCrypto
import Testing

/// Channels as a user meets them: real `meshd` processes on 127.0.0.1, driven by real `meshctl`.
@Suite("meshd channels between processes", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ChannelProcessTests {
    /// Two daemons paired by code: both store each other, show the same verification string,
    /// and the channel is active within 2 s of pairing.
    @Test func pairByCodeThenChannelActiveAndPingOverBothPaths() async throws {
        let a = try await DaemonProcess(name: "alpha")
        let b = try await DaemonProcess(name: "beta")
        defer { a.stopNow(); b.stopNow() }
        let idA = try await a.deviceID()
        let idB = try await b.deviceID()

        let paired = try await a.pair(with: b)
        let inviterView = try #require(paired.inviter["paired"] as? [String: Any])
        #expect(inviterView["deviceID"] as? String == idB)
        #expect(inviterView["name"] as? String == "beta")
        let verification = try #require(inviterView["verification"] as? String)
        #expect(paired.joiner.contains(verification), "both sides show the same verification string")
        #expect(paired.joiner.contains(idA))

        let seconds = try await a.waitForChannel(idB, timeout: 2)
        try await b.waitForChannel(idA, timeout: 2)
        print("process figure: channel active \(Int(seconds * 1000)) ms after pairing")

        let ping = try await a.meshctl(["ping", idB, "--count", "50", "--json"])
        #expect(ping.status == 0, "\(ping.output)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(ping.output.utf8)) as? [String: Any])
        let paths = try #require(report["paths"] as? [[String: Any]])
        #expect(Set(paths.compactMap { $0["path"] as? String }) == ["datagram", "stream"])
        for path in paths {
            #expect(path["received"] as? Int == 50, "every probe answered on \(path["path"] ?? "?")")
            #expect((path["p50Microseconds"] as? Double ?? 0) > 0)
        }
    }

    /// `kill -9` of either side: the channel is active again within 3 s of the restart.
    @Test func killNineAndRestartBringsTheChannelBackWithinThreeSeconds() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let (a, b, idA, idB) = (pair.a, pair.b, pair.idA, pair.idB)

        for victim in [b, a] {
            try await victim.kill9()
            try await victim.restart()
            let other = victim === a ? b : a
            let otherID = victim === a ? idB : idA
            let victimID = victim === a ? idA : idB
            let seconds = try await victim.waitForChannel(otherID, timeout: 3)
            try await other.waitForChannel(victimID, timeout: 3)
            print("process figure: channel back \(Int(seconds * 1000)) ms after restarting \(victim.name) (kill -9)")
        }
    }

    /// A third daemon that is not paired gets no channel, and bytes thrown at a daemon's port by
    /// an unpaired source get no reply at all.
    @Test func anUnpairedDaemonGetsNoChannelAndNoReplyBytes() async throws {
        let a = try await DaemonProcess(name: "alpha")
        let b = try await DaemonProcess(name: "beta")
        defer { a.stopNow(); b.stopNow() }
        _ = try await a.pair(with: b)
        let c = try await DaemonProcess(name: "gamma", extraArguments: ["--peer", a.listen, "--peer", b.listen])
        defer { c.stopNow() }
        // Gamma holds no pair key, so it has nothing to dial; its only way in is the raw bytes below.
        #expect(try await c.peers().isEmpty, "an unpaired daemon has no peers")
        #expect(try await a.peers().count == 1)

        let port = UInt16(a.listen.split(separator: ":").last.flatMap { Int($0) } ?? 0)
        // A TCP connection with a valid preamble and a forged handshake, and one with garbage.
        for payload in [[0x53, 0x4D, 1, 1, 0x00, 0x60] + [UInt8](repeating: 0xAB, count: 96),
                        [UInt8](repeating: 0x41, count: 64)] as [[UInt8]] {
            let reply = try await blocking { try Self.tcpExchange(port: port, payload: payload) }
            #expect(reply.isEmpty, "no reply bytes on TCP, got \(reply.count)")
        }
        let udpReply = try await blocking { try Self.udpExchange(port: port, payload: [UInt8](repeating: 7, count: 148)) }
        #expect(udpReply.isEmpty, "no reply datagram")
    }

    /// Wrong codes fail; after two from one address (a code is invalidated only by failures
    /// from three distinct addresses) that address is refused, even with the right code, and
    /// the code stays live for other devices.
    @Test func wrongCodesFailAndOneAddressIsRefusedAfterTwo() async throws {
        let a = try await DaemonProcess(name: "alpha")
        let b = try await DaemonProcess(name: "beta")
        defer { a.stopNow(); b.stopNow() }
        let waiter = try ChildProcess("meshctl", ["--socket", a.socketPath, "pair", "--json"])
        defer { waiter.terminate(); waiter.process.waitUntilExit() }
        let first = try #require(try await waiter.readLine(timeout: 10))
        let code = try #require((try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])?["code"] as? String)

        var wrong: [String] = []
        while wrong.count < 3 {
            let candidate = PairingCode.generate().description
            if candidate != code { wrong.append(candidate) }
        }
        for attempt in wrong {
            let result = try await b.meshctl(["pair", attempt, "--address", a.listen])
            #expect(result.status != 0, "a wrong code must fail")
            #expect(result.output.lowercased().contains("code"), "the error says the code was wrong: \(result.output)")
        }
        let fourth = try await b.meshctl(["pair", code, "--address", a.listen])
        #expect(fourth.status != 0, "this address is refused after two failures: \(fourth.output)")
        let counters = try #require(try await a.status()["counters"] as? [String: Any])
        #expect((counters["pairing.attempts_failed"] as? Int) == 2, "\(counters)")
        #expect((counters["pairing.attempts_refused"] as? Int ?? 0) >= 2, "\(counters)")
        #expect(try await a.peers().isEmpty)
        #expect(try await b.peers().isEmpty)
    }

    /// `meshctl unpair` on one side removes the pair and closes the channel on both sides.
    @Test func unpairClosesBothSides() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let (a, b, idA, idB) = (pair.a, pair.b, pair.idA, pair.idB)

        let result = try await a.meshctl(["unpair", idB])
        #expect(result.status == 0, "\(result.output)")
        #expect(try await a.peers().isEmpty)
        try await b.waitForChannel(idA, active: false, timeout: 2)
        #expect(try await b.channelState(of: idA) != "active", "the other side's channel closed too")
    }

    /// A daemon whose wall clock runs 2.5 s ahead is estimated within ±5 ms by its peer.
    @Test func aSkewedClockIsEstimatedWithinFiveMilliseconds() async throws {
        let pair = try await DaemonPair.start(extraB: ["--clock-offset-ms", "2500"])
        defer { pair.stopNow() }
        let (a, idB) = (pair.a, pair.idB)

        let found = try await eventually("an estimate within ±5 ms of 2500 ms", timeout: 8) { () -> Double? in
            let peer = try await a.peers().first { ($0["deviceID"] as? String) == idB }
            guard let offset = peer?["clockOffsetMilliseconds"] as? Double, abs(offset - 2500) <= 5 else { return nil }
            return offset
        }
        print("process figure: clock offset estimated \(found) ms for a 2500 ms skew")
    }

    // MARK: - raw sockets

    /// Connects, writes `payload`, then reads for 500 ms; returns whatever came back.
    static func tcpExchange(port: UInt16, payload: [UInt8]) throws -> [UInt8] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw DaemonProcessError("socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw DaemonProcessError("connect failed") }
        _ = payload.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return readFor(fd: fd, milliseconds: 500)
    }

    /// Sends one datagram and listens 500 ms for any reply.
    static func udpExchange(port: UInt16, payload: [UInt8]) throws -> [UInt8] {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw DaemonProcessError("socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { to in
                payload.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, to, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        return readFor(fd: fd, milliseconds: 500)
    }

    private static func readFor(fd: Int32, milliseconds: Int) -> [UInt8] {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(Double(milliseconds) / 1000)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let remaining = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
            guard poll(&poller, 1, remaining) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return received
    }
}
