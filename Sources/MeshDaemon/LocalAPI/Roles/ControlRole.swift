#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MeshLocalAPI

/// Who may change the set of paired devices over the local API: create, wait for, cancel and
/// join pairing codes, and unpair.
///
/// Allowed: uid 0, the daemon's own uid, and the uids and groups of `control_allow`
/// (`ControlAllowList`). Everyone else who can open the socket keeps the read operations
/// (`hello`, `status`, `peers`), `ping` when it has a feature right (`feature_allow`; see
/// `LocalAPIDispatcher.mayPing`) and the data operations (`feature_allow` scopes those), and
/// gets `not-permitted` for these. A connection whose credentials are unknown is refused.
public struct ControlRole: Sendable {
    /// The operations that need the role.
    public static let operations: Set<LocalAPIOperation> = [.pairCreate, .pairWait, .pairCancel, .pairJoin, .unpair]

    /// The daemon's effective uid.
    public let daemonUID: UInt32
    /// Extra uids and groups.
    public let allowList: ControlAllowList
    /// Where group memberships are looked up.
    public let directory: any UserDirectory

    /// Creates the role check.
    public init(daemonUID: UInt32 = UInt32(geteuid()), allowList: ControlAllowList = ControlAllowList(),
                directory: any UserDirectory = SystemUserDirectory()) {
        self.daemonUID = daemonUID
        self.allowList = allowList
        self.directory = directory
    }

    /// Whether the client with `credentials` (nil: unknown) may perform `operation`.
    public func permits(_ operation: LocalAPIOperation, credentials: PeerCredentials?) -> Bool {
        guard Self.operations.contains(operation) else { return true }
        guard let credentials else { return false }
        return holdsRole(credentials)
    }

    /// Whether the client with `credentials` holds the control role.
    public func holdsRole(_ credentials: PeerCredentials) -> Bool {
        let uid = credentials.uid
        if uid == 0 || uid == daemonUID || allowList.uids.contains(uid) { return true }
        guard !allowList.groups.isEmpty else { return false }
        var member = directory.groups(ofUID: uid)
        member.insert(credentials.gid)
        for group in allowList.groups {
            switch group {
            case .gid(let gid):
                if member.contains(gid) { return true }
            case .name(let name):
                if let gid = directory.gid(ofGroupNamed: name), member.contains(gid) { return true }
            }
        }
        return false
    }

    /// Throws `not-permitted` naming `operation` unless `permits` says yes.
    public func check(_ operation: LocalAPIOperation, credentials: PeerCredentials?) throws(LocalAPIErrorBody) {
        guard !permits(operation, credentials: credentials) else { return }
        throw LocalAPIErrorBody.notPermitted(operation.name, uid: credentials?.uid)
    }
}
