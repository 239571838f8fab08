import Foundation

/// What the simulated apps did and saw: the expectations the checks compare against.
///
/// Everything is keyed by daemon index and event ID; nothing here reads a daemon's state, so a
/// check never trusts the code it checks. Collections iterated by a check are arrays or sorted.
public struct SimulationLedger: Sendable {
    /// A send as the app made it.
    public struct Sent: Sendable {
        public let eventID: UUID
        public let sender: Int
        public let targets: [Int]
        /// 1 realtime, 2 reliable (the local API mode byte).
        public let mode: UInt8
        public let feature: String
        /// Position among all sends of the run (first attempt).
        public let index: Int
        public let sentAt: UInt64
        /// The send returned: for a reliable item, durable in the sender's outbox.
        public var confirmed = false
        /// An attempt's outcome is unknown (its daemon crashed first, or it failed): the item may
        /// or may not be queued, and its place in the order is not known.
        public var ambiguous = false
    }

    /// One hand-out of an item to an app.
    public struct Delivery: Sendable {
        public let at: UInt64
        public let inboxID: Int64
        public let redelivery: Bool
        /// The app's attachment generation (it grows with each attach, across the run).
        public let attachment: Int
        /// The daemon it came from (as the event's `from` names it), when known.
        public let from: Int?

        public init(at: UInt64, inboxID: Int64, redelivery: Bool, attachment: Int, from: Int? = nil) {
            self.at = at
            self.inboxID = inboxID
            self.redelivery = redelivery
            self.attachment = attachment
            self.from = from
        }
    }

    public private(set) var sent: [Sent] = []
    private var sentIndex: [UUID: Int] = [:]
    /// deliveries[receiver][eventID], in hand-out order.
    public private(set) var deliveries: [[UUID: [Delivery]]]
    /// Event IDs whose `inbox.ack` returned, per receiver.
    public private(set) var acknowledged: [Set<UUID>]
    /// Crash instants per daemon.
    public private(set) var crashes: [[UInt64]]
    /// Highest snapshot revision per (publisher, feature) whose publish returned true, and the
    /// highest attempted at all (a publish cut by a crash may or may not have stored it).
    public private(set) var publishedConfirmed: [String: UInt64] = [:]
    public private(set) var publishedAttempted: [String: UInt64] = [:]
    /// Highest revision each reader read per (reader, publisher, feature).
    public private(set) var lastRead: [String: UInt64] = [:]
    /// Sessions whose close returned on some daemon.
    public private(set) var closedSessions: Set<UUID> = []

    public init(daemons: Int) {
        deliveries = Array(repeating: [:], count: daemons)
        acknowledged = Array(repeating: [], count: daemons)
        crashes = Array(repeating: [], count: daemons)
    }

    // MARK: - Recording

    /// A send attempt; returns false when the event ID was sent before (a retry).
    @discardableResult
    public mutating func recordSend(_ eventID: UUID, sender: Int, targets: [Int], mode: UInt8, feature: String, at: UInt64) -> Bool {
        guard sentIndex[eventID] == nil else { return false }
        sentIndex[eventID] = sent.count
        sent.append(Sent(eventID: eventID, sender: sender, targets: targets, mode: mode, feature: feature,
                         index: sent.count, sentAt: at))
        return true
    }

    public mutating func confirmSend(_ eventID: UUID) {
        if let index = sentIndex[eventID] { sent[index].confirmed = true }
    }

    public mutating func markAmbiguous(_ eventID: UUID) {
        if let index = sentIndex[eventID] { sent[index].ambiguous = true }
    }

    public func send(_ eventID: UUID) -> Sent? { sentIndex[eventID].map { sent[$0] } }

    public mutating func recordDelivery(_ eventID: UUID, to receiver: Int, _ delivery: Delivery) {
        deliveries[receiver][eventID, default: []].append(delivery)
    }

    public mutating func recordAck(_ eventIDs: [UUID], at receiver: Int) {
        acknowledged[receiver].formUnion(eventIDs)
    }

    public mutating func recordCrash(_ daemon: Int, at: UInt64) { crashes[daemon].append(at) }

    static func slotKey(_ publisher: Int, _ feature: String) -> String { "\(publisher)/\(feature)" }
    static func readKey(_ reader: Int, _ publisher: Int, _ feature: String) -> String { "\(reader)<\(publisher)/\(feature)" }

    public mutating func recordPublishAttempt(_ publisher: Int, feature: String, revision: UInt64) {
        let key = Self.slotKey(publisher, feature)
        publishedAttempted[key] = max(publishedAttempted[key] ?? 0, revision)
    }

    public mutating func recordPublishConfirmed(_ publisher: Int, feature: String, revision: UInt64) {
        let key = Self.slotKey(publisher, feature)
        publishedConfirmed[key] = max(publishedConfirmed[key] ?? 0, revision)
    }

    /// Notes a read and returns the revision read before it (0 when none).
    public mutating func recordRead(_ reader: Int, publisher: Int, feature: String, revision: UInt64) -> UInt64 {
        let key = Self.readKey(reader, publisher, feature)
        let before = lastRead[key] ?? 0
        lastRead[key] = max(before, revision)
        return before
    }

    public mutating func recordClosed(_ session: UUID) { closedSessions.insert(session) }
}
