/// The node's end of the inbound path to its handler (the delivery router): what arrives
/// before a handler is installed is held, in order; what the handler queued and has not
/// consumed yet is counted, in messages and bytes, and bounds the path.
///
/// A datagram message beyond half of either bound is dropped (datagrams are best effort). A
/// stream message is never dropped for room: its reader pauses after it until the handler made
/// room (`isFull`), so a peer sending faster than this daemon stores is slowed down by TCP
/// instead of growing the daemon's memory, and cannot crowd out other peers. The paused readers
/// are kept here (each as what resumes it) and handed back when they may read on. Without a
/// handler messages are held, up to the message bound. Decisions and bookkeeping only:
/// `InboundHandOff` calls the handler and resumes what it is handed.
struct InboundGate: Sendable {
    /// Bound on queued (and on held) messages.
    static let messageLimit = 8192
    /// Bytes of queued messages beyond which stream readers pause and datagram messages are
    /// dropped already at half of it. One stream message per peer connection may still join a
    /// full queue (at most 16 MiB each).
    static let byteLimit = 8 << 20

    /// Whether a handler is installed.
    private(set) var hasHandler = false
    /// Messages the handler queued and has not consumed yet.
    private(set) var queued = 0
    /// Bytes of those messages.
    private(set) var queuedBytes = 0
    /// The most `queuedBytes` ever was (the simulator checks it against the bound).
    private(set) var queuedBytesPeak = 0
    /// What arrived while no handler was installed, in order.
    private(set) var held: [HeldInbound] = []
    /// Stream readers paused until the handler makes room, each as what resumes it.
    private var paused: [@Sendable () -> Void] = []

    /// Stream readers paused now.
    var pausedReaders: Int { paused.count }

    /// Where an arriving message goes.
    enum Admission: Equatable, Sendable {
        /// To the handler now.
        case handOut
        /// Kept until a handler is installed.
        case held
        /// Nowhere (`inboundMessagesDropped`).
        case dropped
    }

    /// An application message arrived.
    mutating func admit(_ message: InboundChannelMessage) -> Admission {
        if message.path == .datagram, queued >= Self.messageLimit / 2 || queuedBytes >= Self.byteLimit / 2 {
            return .dropped
        }
        guard hasHandler else {
            guard held.count < Self.messageLimit else { return .dropped }
            held.append(.message(message))
            return .held
        }
        return .handOut
    }

    /// A channel event happened: true when it goes to the handler now (else it is held, or
    /// dropped beyond the bound).
    mutating func admit(_ event: PeerChannelEvent) -> Bool {
        guard hasHandler else {
            if held.count < Self.messageLimit { held.append(.event(event)) }
            return false
        }
        return true
    }

    /// The handler queued a message of `bytes` instead of handling it at once.
    mutating func handlerQueued(bytes: Int) {
        queued += 1
        queuedBytes += bytes
        queuedBytesPeak = max(queuedBytesPeak, queuedBytes)
    }

    /// The handler finished one message of `bytes` it had queued: the paused readers to
    /// resume, all of them once the queue is below its stream bounds again.
    @discardableResult
    mutating func handlerConsumed(bytes: Int) -> [@Sendable () -> Void] {
        queued = max(0, queued - 1)
        queuedBytes = max(0, queuedBytes - bytes)
        guard !paused.isEmpty, !isFull else { return [] }
        return releaseReaders()
    }

    /// A stream reader pauses (the gate `isFull`) until `resume` is handed back.
    mutating func pause(_ resume: @escaping @Sendable () -> Void) { paused.append(resume) }

    /// Every paused reader, to resume now (the handler went away, or the node stops).
    mutating func releaseReaders() -> [@Sendable () -> Void] {
        defer { paused = [] }
        return paused
    }

    /// Whether a stream reader should pause before reading more: the handler's queue is past
    /// its stream bounds (and there is a handler: without one nothing would make room).
    var isFull: Bool {
        hasHandler && (queued >= Self.messageLimit * 3 / 4 || queuedBytes >= Self.byteLimit)
    }

    /// A handler was installed (`installed`) or removed: what a previous handler queued will
    /// never be consumed now. Returns what was held, in arrival order, for a new handler.
    mutating func handlerChanged(installed: Bool) -> [HeldInbound] {
        hasHandler = installed
        queued = 0
        queuedBytes = 0
        guard installed else { return [] }
        defer { held = [] }
        return held
    }
}

/// Something that arrived before an inbound handler was installed.
enum HeldInbound: Sendable {
    case message(InboundChannelMessage)
    case event(PeerChannelEvent)
}
