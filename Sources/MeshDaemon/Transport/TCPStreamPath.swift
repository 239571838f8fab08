import NIOCore

/// A stream path over one TCP connection (`SocketTransport`): reliable and ordered, frames of
/// up to 65 535 bytes, a write complete once the kernel's send buffer took it.
final class TCPStreamPath: ChannelPath {
    let channel: any Channel
    let remote: PathAddress

    /// The path over `channel`, leading to its remote address ("?" once the connection is gone).
    init(_ channel: any Channel) {
        self.channel = channel
        remote = channel.remoteAddress.map(PathAddress.socket) ?? .host(DaemonConfiguration.Endpoint(host: "?", port: 0))
    }

    var local: PathAddress? { channel.localAddress.map(PathAddress.socket) }
    var eventLoop: any EventLoop { channel.eventLoop }
    var maximumFrameBytes: Int { Int(UInt16.max) }
    var isReliable: Bool { true }
    var isOrdered: Bool { true }

    func send(_ frames: ByteBuffer, promise: EventLoopPromise<Void>?) {
        channel.writeAndFlush(frames, promise: promise)
    }

    func close() { channel.close(promise: nil) }

    var closeFuture: EventLoopFuture<Void> { channel.closeFuture }
}

/// A TCP connection's received frames, as NIO's async wrapper reads them.
extension NIOAsyncChannelInboundStream.AsyncIterator: PathFrameSource where Inbound == WireFrame {}
