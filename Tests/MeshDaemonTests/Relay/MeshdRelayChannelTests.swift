import Foundation
import Testing

/// Two `meshd` on loopback that cannot reach each other directly (every address they know of
/// each other leads nowhere; no mDNS) but share a real Mosquitto: their channel comes up through
/// the broker, reliable items and snapshots go both ways, and `meshctl peers` says the path is
/// the relay.
@Suite("meshd channel over the relay", .enabled(if: ChildProcess.executable("meshd") != nil && MosquittoBroker.shouldRun))
struct MeshdRelayChannelTests {
    @Test func theChannelRunsThroughTheBrokerWhenNoDirectPathWorks() async throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let broker = try MosquittoBroker(folder: folder, accounts: ["devA": "secret-a", "devB": "secret-b"])
        defer { broker.stop() }
        let a = try await DaemonProcess(name: "relay-a", extraArguments: ["--no-mdns", "--relay", "mqtt://devA:secret-a@127.0.0.1:\(broker.port)"])
        defer { a.stopNow() }
        let b = try await DaemonProcess(name: "relay-b", extraArguments: ["--no-mdns", "--relay", "mqtt://devB:secret-b@127.0.0.1:\(broker.port)"])
        defer { b.stopNow() }
        _ = try await a.pair(with: b)
        let idA = try await a.deviceID(), idB = try await b.deviceID()

        // Both move to ports the other never heard of: the addresses each knows lead nowhere.
        try await a.kill9()
        try await b.kill9()
        try await a.restart(listen: "127.0.0.1:0")
        try await b.restart(listen: "127.0.0.1:0")

        let took = try await a.waitForChannel(idB, timeout: 20)
        try await b.waitForChannel(idA, timeout: 5)
        let peer = try #require(try await a.peers().first { $0["deviceID"] as? String == idB })
        #expect((peer["path"] as? String)?.contains("relay") == true, "\(peer)")
        #expect((peer["path"] as? String)?.contains("127.0.0.1") == true, "\(peer)")
        print("relay channel active \(String(format: "%.2f", took)) s after both restarts")

        let watchB = try WatchProcess(b, feature: "demo")
        defer { watchB.stopNow() }
        let watchA = try WatchProcess(a, feature: "demo")
        defer { watchA.stopNow() }
        _ = try await watchB.next(type: "attached", timeout: 10)
        _ = try await watchA.next(type: "attached", timeout: 10)

        let there = try await a.meshctl(["send", "--feature", "demo", "--mode", "reliable", "through-the-broker"])
        #expect(there.status == 0, "\(there.output)")
        let hello = try await watchB.next(type: "envelope", timeout: 15)
        #expect(hello["payload"] as? String == "through-the-broker")
        #expect(hello["from"] as? String == idA)
        let back = try await b.meshctl(["send", "--feature", "demo", "--mode", "reliable", "and-back"])
        #expect(back.status == 0, "\(back.output)")
        let reply = try await watchA.next(type: "envelope", timeout: 15)
        #expect(reply["payload"] as? String == "and-back")

        let snapshotA = try await a.meshctl(["send", "--feature", "demo", "--mode", "snapshot", "--revision", "2", #"{"from":"a"}"#])
        #expect(snapshotA.status == 0, "\(snapshotA.output)")
        #expect(try await watchB.next(type: "snapshot", timeout: 15)["payload"] as? String == #"{"from":"a"}"#)
        let snapshotB = try await b.meshctl(["send", "--feature", "demo", "--mode", "snapshot", "--revision", "5", #"{"from":"b"}"#])
        #expect(snapshotB.status == 0, "\(snapshotB.output)")
        #expect(try await watchA.next(type: "snapshot", timeout: 15)["payload"] as? String == #"{"from":"b"}"#)
    }
}
