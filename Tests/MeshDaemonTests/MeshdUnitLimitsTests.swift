import Foundation
import Testing
@testable import MeshDaemon

/// The system unit's resource ceilings (`MemoryMax=`, `TasksMax=`) cover what the default
/// limits let meshd hold (the arithmetic of docs/SYSTEMD.md, "Memory and tasks"), and the
/// unit's sandbox still scores an exposure of at most 1.5 (`systemd-analyze security`).
@Suite("meshd system unit limits")
struct MeshdUnitLimitsTests {
    static let mebibyte = 1 << 20
    static var unitText: String {
        get throws { try String(contentsOfFile: MeshdSandboxTests.unit, encoding: .utf8) }
    }

    /// The value of `key=` in the unit (last one wins, as in systemd).
    static func value(_ key: String, in text: String) -> String? {
        text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix(key + "=") }.last.map { String($0.dropFirst(key.count + 1)) }
    }

    /// systemd's byte sizes: a number with K, M, G or T (powers of 1024).
    static func bytes(_ text: String) -> Int? {
        let units: [Character: Int] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        guard let last = text.last else { return nil }
        if let unit = units[last] { return Int(text.dropLast()).map { $0 * unit } }
        return Int(text)
    }

    /// The docs' arithmetic at the default limits, for `users` local users with apps connected
    /// and `devices` paired devices.
    static func memoryNeeded(users: Int, devices: Int) -> Int {
        let api = LocalAPIServer.Limits()
        let configuration = DaemonConfiguration(stateDirectory: "/x", socketPath: "/x.sock")
        let base = 64 * mebibyte
        let perConnection = 64 * 1024 + 2 * api.maximumBodyLength + api.writeBufferHighWatermark
        let connections = api.maximumConnections * perConnection
        let bodies = min(api.maximumConnections * api.maximumInFlightBytes, users * configuration.localAPIRequestBytesPerUID)
        let perDevice = 2 * 100_000 * 100 + 200 * 64 * 1024  // dedup horizon (2 parts × 100 B), pending items
        return base + connections + bodies + devices * perDevice
    }

    @Test func memoryAndTasksCeilingsCoverTheDefaultLimits() throws {
        let text = try Self.unitText
        let memory = try #require(Self.value("MemoryMax", in: text).flatMap(Self.bytes), "the unit sets MemoryMax=")
        let tasks = try #require(Self.value("TasksMax", in: text).flatMap { Int($0) }, "the unit sets TasksMax=")
        let needed = Self.memoryNeeded(users: 4, devices: 8)
        print("MemoryMax=\(memory / Self.mebibyte) MiB; default limits with 4 users and 8 devices need ≈ \(needed / Self.mebibyte) MiB; TasksMax=\(tasks)")
        #expect(needed <= memory, "MemoryMax= below what the defaults allow")
        #expect(memory <= 4 << 30, "a ceiling that still protects a small host")
        let threads = 4 + ProcessInfo.processInfo.activeProcessorCount
        #expect(tasks >= 4 * threads && tasks <= 4096, "TasksMax=\(tasks) for ≈ \(threads) threads")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze"), "systemd-analyze is missing"))
    func theUnitsExposureStaysAtMostOnePointFive() async throws {
        let result = try await DaemonProcess.run("/usr/bin/systemd-analyze",
                                                        ["security", "--offline=true", "--no-pager", MeshdSandboxTests.unit],
                                                        timeout: 30)
        let line = try #require(result.output.split(separator: "\n").last { $0.contains("Overall exposure level") })
        let figure = try #require(line.split(separator: " ").compactMap { Double($0) }.first, "\(line)")
        print("systemd-analyze security: \(line)")
        #expect(figure <= 1.5)
    }
}
