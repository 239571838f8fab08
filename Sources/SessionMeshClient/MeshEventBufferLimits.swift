/// How many events a `MeshClient` holds for an app that reads its attachments' events more
/// slowly than they arrive.
///
/// Each attachment's `events` stream holds at most `capacity` events. When one is full the
/// client stops reading the connection's socket (back-pressure, nothing is dropped on the
/// client), so the daemon's slow-reader policy takes over: it sheds realtime events, counts them
/// and reports them as `.eventsDropped` once the app reads again, and keeps reliable inbox items
/// to offer them again. Reading resumes once the full stream holds `lowWatermark` events or
/// fewer.
///
/// Replies share the socket with events. So that an app that awaits a request (say
/// `ackInbox(_:)`) inside its event loop does not wait forever for a reply stuck behind events
/// it has no room for, the client keeps reading while a request waits for its reply, holding at
/// most `replyReserveBytes` of frames that do not fit (replies among them are answered at once).
/// Past that, requests on the connection wait until the app drains its events.
public struct MeshEventBufferLimits: Sendable, Equatable {
    /// Events one attachment's stream holds at most (at least 1). Default 4 096.
    public var capacity: Int
    /// Reading resumes when the full stream holds this many events or fewer (0 ..< capacity).
    /// Default a quarter of `capacity`.
    public var lowWatermark: Int
    /// Bytes of frames (events for full streams) the connection holds while a request waits
    /// for its reply. Default 2 MiB: more than the daemon buffers for one connection (256 KiB)
    /// plus the socket's own buffers, so a reply the daemon has sent is always reached.
    public var replyReserveBytes: Int

    /// The limits of a client that does not pass any: 4 096 events per attachment, reading
    /// resumes at 1 024, 2 MiB reply reserve.
    public static let `default` = MeshEventBufferLimits()

    /// Limits with `capacity` events per attachment; `lowWatermark` defaults to a quarter of it.
    /// Out-of-range values are clamped (capacity ≥ 1, 0 ≤ lowWatermark < capacity, reserve ≥ 0).
    public init(capacity: Int = 4_096, lowWatermark: Int? = nil, replyReserveBytes: Int = 2 << 20) {
        self.capacity = max(1, capacity)
        self.lowWatermark = min(max(0, lowWatermark ?? self.capacity / 4), self.capacity - 1)
        self.replyReserveBytes = max(0, replyReserveBytes)
    }
}
