#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The system's user and group database, as the control role needs it: which groups a uid
/// belongs to and what gid a group name has.
///
/// A protocol so the role check can be tested with a table; `SystemUserDirectory` asks NSS
/// (`/etc/passwd`, `/etc/group`, or whatever the system configured).
public protocol UserDirectory: Sendable {
    /// The uid's primary and supplementary groups; empty when the uid has no account.
    func groups(ofUID uid: UInt32) -> Set<UInt32>
    /// The gid of the group called `name`; nil when there is none.
    func gid(ofGroupNamed name: String) -> UInt32?
}

/// `UserDirectory` through `getpwuid_r`, `getgrouplist` and `getgrnam_r`.
public struct SystemUserDirectory: UserDirectory {
    /// Creates the directory.
    public init() {}

    /// Most groups read for one uid; for a user in more, only the primary group counts.
    static let maximumGroups = 1024

    public func groups(ofUID uid: UInt32) -> Set<UInt32> {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        let status = getpwuid_r(uid_t(uid), &entry, &buffer, buffer.count, &found)
        guard status == 0, found != nil, let name = entry.pw_name else { return [] }
        let primary = UInt32(entry.pw_gid)
        var capacity = 64
        while true {
            var gids = [gid_t](repeating: 0, count: capacity)
            var asked = Int32(capacity)
            let result = getgrouplist(name, entry.pw_gid, &gids, &asked)
            if result >= 0 {
                var found: Set<UInt32> = [primary]
                for index in 0..<min(capacity, Int(max(0, asked))) { found.insert(UInt32(gids[index])) }
                return found
            }
            // -1 with the needed count in `asked`; grow to it (bounded).
            let needed = Int(asked)
            guard needed > capacity, needed <= Self.maximumGroups else { return [primary] }
            capacity = needed
        }
    }

    public func gid(ofGroupNamed name: String) -> UInt32? {
        var entry = group()
        var found: UnsafeMutablePointer<group>?
        var buffer = [CChar](repeating: 0, count: 64 * 1024)
        let status = getgrnam_r(name, &entry, &buffer, buffer.count, &found)
        guard status == 0, found != nil else { return nil }
        return UInt32(entry.gr_gid)
    }
}
