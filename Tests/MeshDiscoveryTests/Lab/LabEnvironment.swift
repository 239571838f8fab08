import Foundation
import Testing

/// Whether the namespace lab can run here, and what to say when it cannot.
///
/// Lab tests skip (with this message) when not root or without `ip netns`; with
/// `MESH_REQUIRE_LAB=1` they run anyway and fail, so CI cannot silently skip them.
enum LabEnvironment {
    static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static var scripts: String { repositoryRoot.appendingPathComponent("scripts/lab").path }

    static let required = ProcessInfo.processInfo.environment["MESH_REQUIRE_LAB"] == "1"

    /// The probe next to the test binary (SwiftPM puts all products in one folder), or
    /// `MESH_DISCOVERY_PROBE`.
    static let probePath: String? = {
        if let explicit = ProcessInfo.processInfo.environment["MESH_DISCOVERY_PROBE"] { return explicit }
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var folder = exe.deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = folder.appendingPathComponent("mesh-discovery-probe").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            folder = folder.deletingLastPathComponent()
        }
        return nil
    }()

    /// Nil when the lab can run; otherwise why not.
    static let unavailableReason: String? = {
        guard getuid() == 0 else { return "not running as root (the lab needs network namespaces)" }
        for tool in ["/usr/sbin/ip", "/usr/bin/unshare", "/usr/bin/dbus-daemon", "/usr/sbin/avahi-daemon"]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing (run scripts/install-deps)"
        }
        guard probePath != nil else {
            return "mesh-discovery-probe is not built (swift build --product mesh-discovery-probe)"
        }
        // Really try: create and delete a namespace of our own.
        let name = "smlab\(getpid())chk"
        let add = Process()
        add.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        add.arguments = ["netns", "add", name]
        add.standardError = FileHandle.nullDevice
        do { try add.run() } catch { return "cannot run ip: \(error)" }
        add.waitUntilExit()
        guard add.terminationStatus == 0 else { return "'ip netns add' is not permitted here" }
        let del = Process()
        del.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        del.arguments = ["netns", "del", name]
        try? del.run()
        del.waitUntilExit()
        return nil
    }()

    static var shouldRun: Bool { unavailableReason == nil || required }

    static var skipComment: Comment {
        Comment(rawValue: "lab skipped: \(unavailableReason ?? "-"); set MESH_REQUIRE_LAB=1 to make this a failure")
    }

    /// Fails the test (MESH_REQUIRE_LAB=1) when the lab cannot run.
    static func requireRunnable() throws {
        if let reason = unavailableReason {
            throw LabError("MESH_REQUIRE_LAB=1 but the lab cannot run: \(reason)")
        }
    }
}

/// A lab step that did not work, with what happened.
struct LabError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
