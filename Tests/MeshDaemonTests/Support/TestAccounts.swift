#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

/// System users and groups a test creates to run clients under real, other uids, and removes
/// again (only those it created). Needs root and the shadow tools (`useradd`, `groupadd`,
/// `userdel`, `groupdel`) and `setpriv`; `unavailableReason` says what is missing. With
/// `MESH_REQUIRE_LAB=1` (CI) a test that needs them fails instead of being skipped.
final class TestAccounts: @unchecked Sendable {
    /// Nil when accounts can be made here; otherwise why not.
    static let unavailableReason: String? = {
        guard getuid() == 0 else { return "not running as root (creating a test user needs root)" }
        for tool in ["/usr/sbin/useradd", "/usr/sbin/groupadd", "/usr/sbin/userdel", "/usr/sbin/groupdel", "/usr/bin/setpriv"]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            return "\(tool) is missing (run scripts/install-deps)"
        }
        return nil
    }()
    static let required = ProcessInfo.processInfo.environment["MESH_REQUIRE_LAB"] == "1"
    static var shouldRun: Bool { unavailableReason == nil || required }
    static var skipComment: Comment {
        Comment(rawValue: "skipped: \(unavailableReason ?? "-"); set MESH_REQUIRE_LAB=1 to make this a failure")
    }

    private var users: [String] = []
    private var groups: [String] = []

    init() throws {
        if let reason = Self.unavailableReason { throw DaemonProcessError("cannot create test users: \(reason)") }
    }

    /// Creates system group `name` (must not exist yet); returns its gid.
    func group(_ name: String) throws -> gid_t {
        try SystemTool.run("/usr/sbin/groupadd", ["--system", name])
        groups.append(name)
        guard let entry = getgrnam(name) else { throw DaemonProcessError("group \(name) was not created") }
        return entry.pointee.gr_gid
    }

    /// Creates system user `name` (no home, no login shell) in its own group plus
    /// `supplementary`; returns its uid and primary gid.
    func user(_ name: String, supplementary: [String] = []) throws -> (uid: uid_t, gid: gid_t) {
        var arguments = ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin"]
        if !supplementary.isEmpty { arguments += ["--groups", supplementary.joined(separator: ",")] }
        try SystemTool.run("/usr/sbin/useradd", arguments + [name])
        users.append(name)
        guard let entry = getpwnam(name) else { throw DaemonProcessError("user \(name) was not created") }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }

    /// Removes every user and group this instance created. Synchronous, for `defer`.
    func removeAll() {
        for name in users.reversed() { try? SystemTool.run("/usr/sbin/userdel", [name]) }
        for name in groups.reversed() { try? SystemTool.run("/usr/sbin/groupdel", [name]) }
        users.removeAll()
        groups.removeAll()
    }

    deinit { removeAll() }
}
