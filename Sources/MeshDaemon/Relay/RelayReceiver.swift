/// One peer's incoming relay messages (or one rendezvous topic's), turned into what a TCP
/// socket and a UDP socket would have handed over: streams in order, datagrams as they come.
///
/// The broker is untrusted, so it may drop, delay, duplicate, reorder or replay any message and
/// forge headers (the header is not authenticated, ``RelayEnvelope``). What this does with them:
///
/// - a stream message is delivered in sequence order per path ID; a message numbered below the
///   next one expected, or held already, is a duplicate or replay and is dropped silently;
/// - a message up to ``Limits/window`` numbers ahead is held until the gap fills; one further
///   ahead closes the path (``CloseReason/gap``), as would held bytes past
///   ``Limits/maximumBufferedBytes`` (``CloseReason/overflow``). The node then redials on a new
///   path: a hostile broker gains nothing but delay, and a forged number can only close a path;
/// - a new path starts at sequence 0 (it may be held until then) and is announced with
///   ``Action/opened(_:)`` just before its first bytes; past ``Limits/maximumPaths`` the path
///   least recently active is closed (``CloseReason/evicted``) to make room, so a new dial
///   always gets in and the state stays bounded;
/// - messages of a path closed recently (either way) are dropped, not taken for a new path;
/// - datagrams and mailbox boxes are passed on at once: their own counters and seals deal with
///   duplicates and replays.
///
/// Everything it keeps is bounded by ``Limits`` per instance, and the node keeps one instance
/// per peer, so the limits are counted by peer. Malformed messages are dropped and counted.
struct RelayReceiver: Sendable {
    /// Bounds of one instance's state.
    struct Limits: Sendable, Equatable {
        /// Live paths at once (a path and its replacement during a redial, plus a spare).
        var maximumPaths = 4
        /// How far ahead of the next expected number a message may be and still be held.
        var window: UInt64 = 64
        /// Bytes held out of order across all paths.
        var maximumBufferedBytes = 256 * 1024
        /// Recently closed path IDs remembered so their late messages are dropped.
        var rememberedClosedPaths = 16

        /// The limits the daemon runs with.
        static let standard = Limits()
    }

    /// Why a path closed.
    enum CloseReason: Sendable, Equatable {
        /// The sender's close message arrived (in order).
        case remote
        /// A message arrived too far ahead of the next expected number.
        case gap
        /// The messages held out of order took more than their share of memory.
        case overflow
        /// Newer paths needed the room.
        case evicted
    }

    /// What the caller does with a received message.
    enum Action: Sendable, Equatable {
        /// The peer's first bytes on a path: the answer on a path this device dialled (the
        /// caller knows its own path IDs), else a new path from the peer, to handle as an
        /// accepted TCP connection.
        case opened(RelayPathID)
        /// The next bytes of the path's stream, in order.
        case streamData(RelayPathID, [UInt8])
        /// The path ended: handle it as a closed TCP connection.
        case closed(RelayPathID, CloseReason)
        /// One sealed datagram, as a UDP socket would hand it over.
        case datagram([UInt8])
        /// One store-and-forward item box.
        case mailboxItem([UInt8])
        /// One store-and-forward ack box.
        case mailboxAck([UInt8])
        /// One store-and-forward snapshot box.
        case mailboxSnapshot([UInt8])
    }

    /// What was dropped, for the node's counters.
    struct Counters: Sendable, Equatable {
        /// Messages that did not parse.
        var malformed = 0
        /// Stream messages numbered below the next expected one or already held.
        var duplicates = 0
        /// Stream messages of recently closed paths, or of unknown paths too far from 0.
        var stale = 0
        /// Paths closed for a gap beyond the window.
        var gapsClosed = 0
        /// Paths closed for holding too many bytes.
        var overflowsClosed = 0
        /// Paths closed to make room for newer ones.
        var evicted = 0
    }

    struct Path: Sendable {
        var next: UInt64 = 0
        var held: [UInt64: RelayEnvelope] = [:]
        var heldBytes = 0
        var announced = false
        var lastActive: UInt64 = 0
    }

    // Not private: RelayReceiver+Stream.swift updates them; nothing outside this type does.
    let limits: Limits
    var counters = Counters()
    var paths: [RelayPathID: Path] = [:]
    /// Recently closed path IDs, oldest first.
    var closedPaths: [RelayPathID] = []
    /// Bytes held out of order, all paths together.
    var bufferedBytes = 0
    /// Counts received stream messages, to order paths by last activity without a clock.
    var tick: UInt64 = 0

    init(limits: Limits = .standard) { self.limits = limits }

    /// Takes the bytes of one MQTT message from the peer's topic.
    mutating func receive(_ bytes: [UInt8]) -> [Action] {
        guard let envelope = try? RelayEnvelope(decoding: bytes) else {
            counters.malformed += 1
            return []
        }
        return receive(envelope)
    }

    /// Takes one parsed message.
    mutating func receive(_ envelope: RelayEnvelope) -> [Action] {
        switch envelope.kind {
        case .datagram: return [.datagram(envelope.payload)]
        case .mailboxItem: return [.mailboxItem(envelope.payload)]
        case .mailboxAck: return [.mailboxAck(envelope.payload)]
        case .mailboxSnapshot: return [.mailboxSnapshot(envelope.payload)]
        case .streamData, .streamClose: return receiveStream(envelope)
        }
    }

    /// The node closed `path` (its connection ended on this side): forget it and drop its late
    /// messages. Nothing to do for a path this receiver does not know.
    mutating func closeLocally(_ path: RelayPathID) {
        guard paths[path] != nil else { return }
        forget(path)
    }

    /// Whether the peer's `path` is open (announced and not closed).
    func isOpen(_ path: RelayPathID) -> Bool { paths[path]?.announced ?? false }
}
