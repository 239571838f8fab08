import Foundation

/// Counters of the local API server, shared by every connection (they run on different event
/// loops, hence the lock). `meshd` can fold them into `DaemonStatus.counters`.
public final class LocalAPICounters: @unchecked Sendable {
    /// What is counted.
    public enum Name: String, Sendable, CaseIterable {
        /// Connections accepted.
        case connectionsAccepted = "api.connections.accepted"
        /// Connections refused because too many were open.
        case connectionsRefused = "api.connections.refused"
        /// Connections refused because their uid already had its maximum open.
        case connectionsRefusedPerUID = "api.connections.refused_per_uid"
        /// Connections closed by a deadline: no first request in time, or a frame left half-sent.
        case connectionsTimedOut = "api.connections.timed_out"
        /// `ping` requests refused because their uid had its maximum running.
        case pingsRefused = "api.ping.refused"
        /// Times a connection's next request waited because its uid's requests running on other
        /// connections already held the uid's bytes.
        case uidBudgetWaits = "api.uid_budget.waits"
        /// Requests answered (reply or error).
        case requests = "api.requests"
        /// Connections closed for malformed input.
        case malformedInput = "api.malformed"
        /// Times reading from a client was paused because it did not read its replies.
        case slowReaderPauses = "api.slow_reader.pauses"
        /// Connections closed for exceeding the in-flight request limit.
        case slowReaderCloses = "api.slow_reader.closes"
        /// Events shed because a client's outbound buffer was full.
        case eventsShed = "api.events.shed"
        /// Inbox items not written because an earlier one of the same attachment was shed and
        /// waits to be offered again; they are offered again after it, in order.
        case eventsHeldForOrder = "api.events.held_for_order"
    }

    private let lock = NSLock()
    private var values: [Name: UInt64] = [:]

    /// Creates zeroed counters.
    public init() {}

    /// Adds `amount` to a counter.
    public func add(_ name: Name, _ amount: UInt64 = 1) {
        lock.lock()
        values[name, default: 0] &+= amount
        lock.unlock()
    }

    /// The current value of a counter.
    public func value(_ name: Name) -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        return values[name, default: 0]
    }

    /// Every counter by its dotted name (zero ones included).
    public func snapshot() -> [String: UInt64] {
        lock.lock()
        defer { lock.unlock() }
        var result: [String: UInt64] = [:]
        for name in Name.allCases { result[name.rawValue] = values[name, default: 0] }
        return result
    }
}
