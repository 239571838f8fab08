import MeshLocalAPI
import Testing
@testable import MeshDaemon

/// `ping` needs the control role or a feature right, and each uid has at most a few running.
@Suite("local API ping rights and slots")
struct LocalAPIPingRightsTests {
    static func client(_ uid: UInt32) -> PeerCredentials { PeerCredentials(pid: 1, uid: uid, gid: uid) }

    /// With `feature_allow = ["1000:notes"]`: uid 1000 may ping, uid 1001 may not (its message
    /// says how to change that), the daemon's user and root may (control role).
    @Test func pingNeedsTheControlRoleOrAFeatureRight() async throws {
        let dispatcher = LocalAPIDispatcher(controlPlane: FakeControlPlane(), defaultPairingLifetime: 60,
                                            featureAllowList: try FeatureAllowList(parsing: ["1000:notes"]),
                                            controlRole: ControlRole(daemonUID: 999))
        let ping = LocalAPIRequest.ping(deviceID: "AAAAAAA", count: 3)
        #expect((try? await dispatcher.perform(ping, credentials: Self.client(1000)).get()) != nil)
        #expect((try? await dispatcher.perform(ping, credentials: Self.client(999)).get()) != nil, "the daemon's user")
        #expect((try? await dispatcher.perform(ping, credentials: Self.client(0)).get()) != nil, "root")
        guard case .failure(let error) = await dispatcher.perform(ping, credentials: Self.client(1001)) else {
            Issue.record("uid 1001 pinged without a feature right")
            return
        }
        #expect(error.code == "not-permitted")
        #expect(error.message == "not permitted: ping probes the paired devices and uid 1001 may not; run it as root or the daemon's user, add the uid to control_allow, or give it a feature in feature_allow in the daemon's config")
        guard case .failure(let unknown) = await dispatcher.perform(ping, credentials: nil) else {
            Issue.record("a client of unknown uid pinged")
            return
        }
        #expect(unknown.code == "not-permitted")
    }

    @Test func withoutAFeatureListEveryKnownUIDMayPing() async {
        let dispatcher = LocalAPIDispatcher(controlPlane: FakeControlPlane(), defaultPairingLifetime: 60,
                                            controlRole: ControlRole(daemonUID: 999))
        #expect((try? await dispatcher.perform(.ping(deviceID: "AAAAAAA", count: 1), credentials: Self.client(1001)).get()) != nil)
    }

    /// Four pings of one uid run at once; the fifth gets `too-many-pings` at once (another uid
    /// is not affected), and a slot given back lets the next one run.
    @Test func aUIDHasAtMostFourPingsRunning() async throws {
        let plane = FakeControlPlane()
        let counters = LocalAPICounters()
        let dispatcher = LocalAPIDispatcher(controlPlane: plane, defaultPairingLifetime: 60, counters: counters,
                                            controlRole: ControlRole(daemonUID: 999))
        await plane.holdPings()
        let ping = LocalAPIRequest.ping(deviceID: "AAAAAAA", count: 10_000)
        let running = (0..<4).map { _ in Task { await dispatcher.perform(ping, credentials: Self.client(1000)) } }
        try await pollUntil { await plane.pingsHeld == 4 }
        #expect(dispatcher.pingSlots.count(uid: 1000) == 4)
        guard case .failure(let error) = await dispatcher.perform(ping, credentials: Self.client(1000)) else {
            Issue.record("a fifth ping ran")
            return
        }
        #expect(error.code == "too-many-pings")
        #expect(error.message == "uid 1000 already has 4 ping requests running; wait for one to finish and retry")
        #expect(counters.value(.pingsRefused) == 1)
        let other = Task { await dispatcher.perform(ping, credentials: Self.client(1001)) }
        try await pollUntil { await plane.pingsHeld == 5 }
        await plane.releasePings()
        for task in running { #expect((try? await task.value.get()) != nil) }
        #expect((try? await other.value.get()) != nil)
        #expect(dispatcher.pingSlots.count(uid: 1000) == 0)
        #expect((try? await dispatcher.perform(ping, credentials: Self.client(1000)).get()) != nil)
        print("pings of uid 1000 running at once: at most \(dispatcher.pingSlots.maximumPerUID); the 5th was refused with too-many-pings")
    }
}
