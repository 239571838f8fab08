import NIOCore

/// One path a channel runs on: a connection to one remote end that carries whole wire frames
/// (handshake and pairing messages, then sealed stream frames), whatever carries them — a TCP
/// connection, an ordered stream emulated over broker messages (the relay), or a simulated link.
///
/// The node's decisions (`PeerChannels`, `PeerRuntime`, dialing, leases, keepalives, rekeying,
/// the outbound budget) use only what this protocol says: where the path leads, its frame size,
/// whether it is reliable and ordered, writes and their completions, close. They never ask
/// which kind of path it is.
///
/// Received frames do not come through this object: the transport hands them, with the path,
/// to the task that drives it (`PathFrames`), which reads them in order.
///
/// Every method may be called from any thread; completions and the close notification run on
/// `eventLoop`.
public protocol ChannelPath: AnyObject, Sendable {
    /// Where the path leads (the peer's socket address, or a relay address).
    var remote: PathAddress { get }
    /// This end's own address on a direct path (the local interface discovery compares with
    /// what it found); nil when the path has none (the relay).
    var local: PathAddress? { get }
    /// The loop the path's completions and close notification run on (the node's loop).
    var eventLoop: any EventLoop { get }
    /// The largest frame body the path carries (a stream frame's length field allows 65 535).
    var maximumFrameBytes: Int { get }
    /// Whether a frame written is delivered unless the path closes (TCP, the relay's stream).
    var isReliable: Bool { get }
    /// Whether frames arrive in the order written (a gap closes an ordered path).
    var isOrdered: Bool { get }

    /// Writes `frames` — one or more whole wire frames, each a 2-byte big-endian length and its
    /// body, as `WireFrameDecoder` reads them — after everything written before, and sends them
    /// at once. `promise` completes once the path no longer holds the bytes (the kernel took
    /// them; the broker acknowledged them) or fails when the path closed first: the outbound
    /// budget counts a write until then.
    func send(_ frames: ByteBuffer, promise: EventLoopPromise<Void>?)

    /// Closes the path (idempotent); the remote end reads the end of its frames.
    func close()

    /// Completes once the path is closed, by either side or by a failure.
    var closeFuture: EventLoopFuture<Void> { get }
}

extension ChannelPath {
    /// Writes `frames` (whole wire frames) and waits until the write completed; throws when the
    /// path closed first. For handshake and pairing messages, which wait for their answer anyway.
    func write(_ frames: [UInt8]) async throws {
        let promise = eventLoop.makePromise(of: Void.self)
        send(ByteBuffer(bytes: frames), promise: promise)
        try await promise.futureResult.get()
    }
}
