#if canImport(Glibc)
import Glibc
#endif
import NIOCore

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

extension PeerCredentials {
    /// The credentials of `channel`'s peer (`SO_PEERCRED`), read at once; nil when the channel
    /// is not a socket, the option cannot be read, or this is called off the channel's loop.
    static func read(from channel: any Channel) -> PeerCredentials? {
        #if canImport(Glibc)
        guard channel.eventLoop.inEventLoop, let provider = channel as? any SocketOptionProvider else { return nil }
        let credentials = NIOLoopBoundBox<PeerCredentials?>(nil, eventLoop: channel.eventLoop)
        // On the channel's loop the future is already complete, so the callback runs here.
        let future: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        future.whenSuccess { credentials.value = $0 }
        return credentials.value
        #else
        return nil
        #endif
    }
}
