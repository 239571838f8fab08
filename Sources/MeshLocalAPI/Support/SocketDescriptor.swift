#if canImport(Glibc)
import Glibc
#endif
import NIOCore

/// Finds the descriptor behind a NIO socket channel, which NIO does not expose, so that the
/// hot paths can write to it with one system call (the daemon's `MeshNode.sendDirectly`,
/// `SocketDirectOutput` on both ends of a local API connection) instead of through the
/// channel's write path.
///
/// The channel's socket cookie (`SO_COOKIE`, unique per socket for the kernel's lifetime) is
/// read through the channel, then this process's descriptors are probed for the socket with
/// that cookie. The channel owns and closes the descriptor: a user must check that the channel
/// is still active, on its event loop, before each use.
package enum SocketDescriptor {
    /// `SO_COOKIE` from the kernel's generic socket options (x86-64 and arm64 use them).
    private static let cookieOption: CInt = 57

    /// The descriptor of `channel`'s socket, or nil when it cannot be found (not a socket
    /// channel, a kernel without socket cookies, or /proc not mounted). Call on the channel's
    /// event loop, where the cookie is read at once.
    package static func of(_ channel: any Channel) -> CInt? {
        #if os(Linux)
        guard channel.eventLoop.inEventLoop, let provider = channel as? any SocketOptionProvider else { return nil }
        let read: EventLoopFuture<UInt64> = provider.unsafeGetSocketOption(level: SocketOptionLevel(SOL_SOCKET),
                                                                            name: SocketOptionName(cookieOption))
        var cookie: UInt64?
        read.assumeIsolated().whenSuccess { cookie = $0 }
        guard let cookie, cookie != 0 else { return nil }
        return descriptor(withCookie: cookie)
        #else
        return nil
        #endif
    }

    #if os(Linux)
    /// The open descriptor whose socket has `cookie`, probing the entries of /proc/self/fd.
    static func descriptor(withCookie cookie: UInt64) -> CInt? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        // Bounded: a process has far fewer descriptors than this.
        for _ in 0..<1_048_576 {
            guard let entry = readdir(directory) else { return nil }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let descriptor = CInt(name) else { continue }
            var value: UInt64 = 0
            var length = socklen_t(MemoryLayout<UInt64>.size)
            if getsockopt(descriptor, SOL_SOCKET, cookieOption, &value, &length) == 0, value == cookie {
                return descriptor
            }
        }
        return nil
    }
    #endif
}
