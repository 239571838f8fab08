// mesh-channel-bench: two MeshNodes in one process on 127.0.0.1 — pairing, handshake time,
// ping round trips per path, and idle CPU/RSS. Prints figures; asserts nothing.
//
//   swift run -c release mesh-channel-bench [--pings N] [--handshakes N] [--idle-seconds S]
import Foundation
import Logging
import MeshDaemon
import MeshLocalAPI
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

func argument(_ name: String, default value: Int) -> Int {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count,
          let parsed = Int(arguments[index + 1]) else { return value }
    return parsed
}

func temporaryFolder() -> String {
    let path = NSTemporaryDirectory() + "mesh-channel-bench-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

func residentMegabytes() -> Double {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let pages = text.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0
    return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
}

func waitUntil(_ timeout: Double, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return await condition()
}

func node(_ name: String, folder: String, port: Int, group: MultiThreadedEventLoopGroup) throws -> MeshNode {
    var logger = Logger(label: name)
    logger.logLevel = .error
    let configuration = DaemonConfiguration(name: name, stateDirectory: folder, socketPath: folder + "/sock",
                                            listen: .init(host: "127.0.0.1", port: port))
    return try MeshNode(configuration: configuration, logger: logger, eventLoopGroup: group)
}

func active(_ a: MeshNode, _ b: MeshNode) async -> Bool {
    let forward = await a.peers().first?.channel == .active
    let backward = await b.peers().first?.channel == .active
    return forward && backward
}

let pings = argument("--pings", default: 2000)
let handshakes = argument("--handshakes", default: 20)
let idleSeconds = argument("--idle-seconds", default: 10)
let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)   // one loop per node, as two daemons would have
let folderA = temporaryFolder(), folderB = temporaryFolder()
defer {
    try? FileManager.default.removeItem(atPath: folderA)
    try? FileManager.default.removeItem(atPath: folderB)
}

let alice = try node("alice", folder: folderA, port: 0, group: group)
let aliceTask = Task { try await alice.run() }
let firstBob = try node("bob", folder: folderB, port: 0, group: group)
var bob = firstBob
var bobTask = Task { try await firstBob.run() }
_ = await waitUntil(5) {
    let a = await alice.boundListenAddress
    let b = await firstBob.boundListenAddress
    return a != nil && b != nil
}
guard let aliceAddress = await alice.boundListenAddress, let bobPort = await firstBob.boundListenAddress?.port else {
    fatalError("nodes did not start")
}

let pairStart = ContinuousClock.now
let invitation = try await alice.createPairingCode(validFor: 60)
async let invited = alice.awaitPairing(code: invitation.code)
let joined = try await bob.joinPairing(code: invitation.code, address: aliceAddress.description)
_ = try await invited
let paired = ContinuousClock.now - pairStart
_ = await waitUntil(5) { await active(alice, bob) }
print("pairing (CPace, 4 messages): \(paired); channel active \(ContinuousClock.now - pairStart) after the code was typed")
print("paired with \(joined.name), verification \(joined.verification)")

// Handshake time: restart bob repeatedly; bob initiates each new channel.
var handshakeMicros: [Double] = []
var reconnectMillis: [Double] = []
for _ in 0..<handshakes {
    bobTask.cancel()
    _ = await bobTask.result
    _ = await waitUntil(5) { await alice.peers().first?.channel != .active }
    let restart = ContinuousClock.now
    bob = try node("bob", folder: folderB, port: bobPort, group: group)
    let current = bob
    bobTask = Task { try await current.run() }
    _ = await waitUntil(5) { await active(alice, current) }
    let elapsed = ContinuousClock.now - restart
    reconnectMillis.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
    if let micros = await current.status().counters["handshake.last_initiated_us"], micros > 0 {
        handshakeMicros.append(Double(micros))
    }
}
func describe(_ values: [Double], _ unit: String) -> String {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return "no samples" }
    return String(format: "min %.0f, p50 %.0f, max %.0f %@ (n=%d)", sorted[0], sorted[sorted.count / 2],
                  sorted[sorted.count - 1], unit, sorted.count)
}
print("handshake (initiator: message 1 built → keys, loopback): " + describe(handshakeMicros, "µs"))
print("restart → channel active again (new node, same state and port): " + describe(reconnectMillis, "ms"))

let report = try await alice.ping(deviceID: bob.deviceID.description, count: pings)
for path in report.paths {
    print(String(format: "ping %@: %d/%d, min %.1f µs, p50 %.1f µs, p99 %.1f µs, max %.1f µs",
                 path.path.rawValue, path.received, path.sent, path.minMicroseconds ?? -1, path.p50Microseconds ?? -1,
                 path.p99Microseconds ?? -1, path.maxMicroseconds ?? -1))
}

let cpuBefore = cpuSeconds()
try await Task.sleep(for: .seconds(idleSeconds))
let cpu = cpuSeconds() - cpuBefore
print(String(format: "idle, two nodes with an active channel (keepalive 1 s): %.2f %% of one core over %d s, RSS %.1f MB (whole process)",
             cpu / Double(idleSeconds) * 100, idleSeconds, residentMegabytes()))

bobTask.cancel()
aliceTask.cancel()
_ = await bobTask.result
_ = await aliceTask.result
try await group.shutdownGracefully()
