/// The process at the other end of a local API connection, as the kernel reports it
/// (`SO_PEERCRED`).
///
/// The stored properties mirror Linux's `struct ucred` field for field (pid, uid, gid; 32 bits
/// each), so the socket option can be read straight into this type.
public struct PeerCredentials: Sendable, Equatable, CustomStringConvertible {
    /// Process id of the connecting process.
    public var pid: Int32
    /// Its effective user id.
    public var uid: UInt32
    /// Its effective group id.
    public var gid: UInt32

    /// Creates credentials.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// `pid=… uid=… gid=…`.
    public var description: String { "pid=\(pid) uid=\(uid) gid=\(gid)" }
}
