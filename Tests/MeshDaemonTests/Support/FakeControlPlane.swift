import MeshDaemon
import MeshLocalAPI

/// A scripted `MeshControlPlane`: fixed status and peers, one pairing code, and pairing waits
/// that end when the test completes or cancels them, or (as `MeshNode`'s do) when the request's
/// task is cancelled, unless `ignoreCancelledPairingWaits()` was called.
actor FakeControlPlane: MeshControlPlane {
    static let peerID = "AAAAAAA-BBBBBBB-CCCCCCC-DDDDDDD"
    static let code = "K7Q2-9XWM"

    private var waiters: [String: [(id: UInt64, continuation: CheckedContinuation<PairedDevice, any Error>)]] = [:]
    private var nextWaiterID: UInt64 = 0
    private var pairingWaitsIgnoreCancellation = false
    private(set) var cancelledCodes: [String] = []
    private(set) var unpaired: [String] = []
    private(set) var createdLifetimes: [Double] = []
    /// What `status` reports as counters; tests replace it.
    var counters: [String: UInt64] = ["handshakes": 3]
    /// What `peers` reports; tests replace it.
    var peerList = [PeerStatus(deviceID: peerID, name: "laptop",
                               addresses: [PeerAddress(address: "127.0.0.1:47002", source: .pairing)],
                               channel: .active, lastHandshake: 1_700_000_000, rttMilliseconds: 0.08,
                               clockOffsetMilliseconds: 2500.2, clockOffsetErrorMilliseconds: 0.04,
                               leaseExpires: 1_700_000_004, reachable: true)]

    func status() async -> DaemonStatus {
        DaemonStatus(deviceID: "ZZZZZZZ-YYYYYYY-XXXXXXX-WWWWWWW", name: "fake", listen: "127.0.0.1:47470",
                     socket: "/tmp/fake.sock", uptimeSeconds: 12.5, counters: counters)
    }

    func peers() async -> [PeerStatus] { peerList }

    func setCounters(_ counters: [String: UInt64]) { self.counters = counters }
    func setPeers(_ peers: [PeerStatus]) { peerList = peers }

    func createPairingCode(validFor seconds: Double, replace: Bool) async throws -> PairingInvitation {
        createdLifetimes.append(seconds)
        return PairingInvitation(code: Self.code, expires: 1_700_000_000 + seconds)
    }

    func awaitPairing(code: String) async throws -> PairedDevice {
        guard code == Self.code else { throw MeshError.invalidCode("unknown code") }
        let id = nextWaiterID
        nextWaiterID += 1
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if Task.isCancelled && !pairingWaitsIgnoreCancellation {
                    continuation.resume(throwing: CancellationError())
                } else {
                    waiters[code, default: []].append((id, continuation))
                }
            }
        } onCancel: {
            Task { await self.cancelWaiter(id, code: code) }
        }
    }

    /// Pairing waits from now on do not end when their task is cancelled (a slow operation).
    func ignoreCancelledPairingWaits() { pairingWaitsIgnoreCancellation = true }

    private func cancelWaiter(_ id: UInt64, code: String) {
        guard !pairingWaitsIgnoreCancellation,
              let index = waiters[code]?.firstIndex(where: { $0.id == id }),
              let waiter = waiters[code]?.remove(at: index) else { return }
        waiter.continuation.resume(throwing: CancellationError())
    }

    func cancelPairing(code: String) async {
        cancelledCodes.append(code)
        for waiter in waiters.removeValue(forKey: code) ?? [] {
            waiter.continuation.resume(throwing: MeshError.pairingCancelled)
        }
    }

    func joinPairing(code: String, address: String?, replace: Bool) async throws -> PairedDevice {
        guard code == Self.code else { throw MeshError.pairingFailed }
        return PairedDevice(deviceID: Self.peerID, name: "laptop", verification: "4821 0375")
    }

    func unpair(deviceID: String) async throws {
        guard Self.peerID.hasPrefix(deviceID) else { throw MeshError.unknownPeer(deviceID) }
        unpaired.append(deviceID)
    }

    func ping(deviceID: String, count: Int) async throws -> PingReport {
        guard Self.peerID.hasPrefix(deviceID) else { throw MeshError.unknownPeer(deviceID) }
        if holdingPings { await withCheckedContinuation { heldPings.append($0) } }
        return PingReport(deviceID: Self.peerID, paths: PingPath.allCases.map {
            PingPathReport(path: $0, sent: count, received: count, minMicroseconds: 40, p50Microseconds: 55,
                           p99Microseconds: 120, maxMicroseconds: 150)
        })
    }

    private var holdingPings = false
    private var heldPings: [CheckedContinuation<Void, Never>] = []

    /// From now on, pings wait until `releasePings()`.
    func holdPings() { holdingPings = true }

    /// Pings waiting now.
    var pingsHeld: Int { heldPings.count }

    /// Lets every waiting ping (and later ones) finish.
    func releasePings() {
        holdingPings = false
        for ping in heldPings { ping.resume() }
        heldPings.removeAll()
    }

    /// Completes every wait for `code` with a pairing.
    func completePairing(code: String) {
        for waiter in waiters.removeValue(forKey: code) ?? [] {
            waiter.continuation.resume(returning: PairedDevice(deviceID: Self.peerID, name: "laptop", verification: "4821 0375"))
        }
    }

    /// How many `pair.wait` calls are waiting.
    func waitingCount() -> Int { waiters.values.map(\.count).reduce(0, +) }
}
