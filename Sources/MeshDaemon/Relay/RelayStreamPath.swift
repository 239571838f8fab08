import NIOCore

/// One stream path through the relay broker: an ordered, reliable byte stream emulated over
/// numbered relay messages (`RelayStreamSender` out, the peer's `RelayReceiver` in), carrying the
/// same preamble and frames a TCP connection would.
///
/// Every message is published at QoS 1 on the pair's blinded outbound topic of the day. A write
/// completes once libmosquitto took the messages (the broker's PUBACK follows); with no broker
/// connection the write fails and the path closes, and the node redials, as after a reset TCP
/// connection. Everything but the `ChannelPath` entry points runs on the node's loop.
final class RelayStreamPath: ChannelPath, @unchecked Sendable {
    let remote: PathAddress
    let local: PathAddress? = nil
    let eventLoop: any EventLoop
    let maximumFrameBytes = 65_535
    let isReliable = true
    let isOrdered = true
    /// The path's random ID (the same in both directions).
    let pathID: RelayPathID
    /// Where its received bytes go.
    let inbound: RelayFrameFeed

    private var sender: RelayStreamSender
    /// A dialled path's preamble: it leaves with the first frames written.
    private var preamble: [UInt8]?
    private let publish: ([UInt8]) -> Bool
    private let closePromise: EventLoopPromise<Void>
    private var isClosed = false
    /// Called once when the path closes, either way (the transport forgets it).
    var onClose: (() -> Void)?

    /// A path to (or from) `remote`; `publish` sends one relay message at QoS 1 and says whether
    /// the broker connection took it.
    init(remote: PathAddress, pathID: RelayPathID, preamble: [UInt8]?, eventLoop: any EventLoop,
         publish: @escaping ([UInt8]) -> Bool) {
        self.remote = remote
        self.pathID = pathID
        self.preamble = preamble
        self.eventLoop = eventLoop
        self.publish = publish
        sender = RelayStreamSender(pathID: pathID)
        inbound = RelayFrameFeed(expectsPreamble: preamble == nil)
        closePromise = eventLoop.makePromise(of: Void.self)
    }

    func send(_ frames: ByteBuffer, promise: EventLoopPromise<Void>?) {
        guard eventLoop.inEventLoop else {
            eventLoop.execute { self.send(frames, promise: promise) }
            return
        }
        guard !isClosed else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        var bytes = preamble ?? []
        preamble = nil
        bytes.append(contentsOf: frames.readableBytesView)
        for message in sender.messages(carrying: bytes) where !publish(message) {
            promise?.fail(ChannelError.ioOnClosedChannel)
            end(sendClose: false)
            return
        }
        promise?.succeed()
    }

    func close() {
        guard eventLoop.inEventLoop else {
            eventLoop.execute { self.close() }
            return
        }
        end(sendClose: true)
    }

    var closeFuture: EventLoopFuture<Void> { closePromise.futureResult }

    /// The peer closed the path, or its receiver gave up on it (a gap, an overflow).
    func remoteEnded() { end(sendClose: false) }

    private func end(sendClose: Bool) {
        guard !isClosed else { return }
        isClosed = true
        if sendClose, let message = sender.closeMessage() { _ = publish(message) }
        inbound.finish()
        onClose?()
        onClose = nil
        closePromise.succeed()
    }
}
