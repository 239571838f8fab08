#if canImport(Glibc)
import Glibc
#endif
import MeshLocalAPI
import NIOCore

/// A local API connection's socket, written with `send(2)` by its `LocalAPIFrameWriter` while
/// the channel has nothing of the writer's left to write (see `LocalAPIFrameWriter`): a reply
/// or a delivered event then costs one system call and no trip through NIO's write path.
///
/// The channel owns the descriptor; it is used only while the channel is active, on its loop.
final class SocketDirectOutput: LocalAPIDirectOutput {
    private let descriptor: CInt
    /// Held strongly: the channel's pipeline holds the writer that holds this, and NIO empties
    /// the pipeline when the channel closes, which ends the cycle.
    private let channel: any Channel

    /// The channel's socket, or nil when its descriptor cannot be found (the writer then uses
    /// the channel, as without this). Call on the channel's event loop.
    init?(channel: any Channel) {
        guard let descriptor = SocketDescriptor.of(channel) else { return nil }
        self.descriptor = descriptor
        self.channel = channel
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard channel.isActive, let base = bytes.baseAddress else { return -1 }
        while true {
            let sent = send(descriptor, base, bytes.count, CInt(MSG_DONTWAIT | MSG_NOSIGNAL))
            if sent >= 0 { return sent }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return 0
            default: return -1
            }
        }
    }
}
