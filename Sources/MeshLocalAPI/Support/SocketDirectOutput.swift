#if canImport(Glibc)
import Glibc
#endif
import NIOCore

/// A local API connection's socket, written with `send(2)` by its `LocalAPIDirectWriter` while
/// the channel has nothing of the writer's left to write: a reply or a delivered event (in the
/// daemon), a request (in the client) then costs one system call and no trip through NIO's
/// write path.
///
/// The channel owns the descriptor; it is used only while the channel is active, on its loop.
package final class SocketDirectOutput: LocalAPIDirectOutput {
    private let descriptor: CInt
    /// Held strongly: the channel's pipeline holds the writer that holds this, and NIO empties
    /// the pipeline when the channel closes, which ends the cycle.
    private let channel: any Channel

    /// The channel's socket, or nil when its descriptor cannot be found (the writer then uses
    /// the channel, as without this). Call on the channel's event loop.
    package init?(channel: any Channel) {
        guard let descriptor = SocketDescriptor.of(channel) else { return nil }
        self.descriptor = descriptor
        self.channel = channel
    }

    package func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard channel.isActive, let base = bytes.baseAddress else { return -1 }
        while true {
            #if os(Linux)
            let sent = send(descriptor, base, bytes.count, CInt(MSG_DONTWAIT | MSG_NOSIGNAL))
            #else
            let sent = send(descriptor, base, bytes.count, MSG_DONTWAIT)
            #endif
            if sent >= 0 { return sent }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return 0
            default: return -1
            }
        }
    }
}
