import MeshCore

/// The outbound budget of every channel connection (`OutboundBudget`), by connection id, and
/// what the node reports about them: why each peer's last channel closed, the highest charge a
/// connection reached, whether memory is worth giving back.
///
/// A value type kept by `MeshNode`: the node opens a budget when a channel becomes active,
/// feeds it every stream write and completion, closes it with the channel, and asks each timer
/// pass which connections stalled.
struct OutboundQueues: Sendable {
    /// Why and when (wall seconds) a peer's last channel closed.
    struct Closing: Sendable, Equatable {
        var reason: String
        var at: Double
    }

    let replyLimit: Int
    let limit: Int
    let stallNanoseconds: UInt64
    private var budgets: [UInt64: OutboundBudget] = [:]
    private(set) var lastClosing: [DeviceID: Closing] = [:]
    /// The highest charge any connection reached since the node started.
    private(set) var peakCharge = 0
    /// A connection that went over its reply limit has drained or closed since the last release.
    private var releaseWanted = false

    /// Budgets of `replyLimit` and `limit` bytes (charged), closing a connection that stays
    /// over its reply limit for longer than `stallSeconds`.
    init(replyLimit: Int, limit: Int, stallSeconds: Double) {
        self.replyLimit = replyLimit
        self.limit = limit
        stallNanoseconds = Nanoseconds.from(seconds: stallSeconds)
    }

    /// A channel became active on `connection`: a fresh, empty budget.
    mutating func open(_ connection: UInt64) {
        budgets[connection] = OutboundBudget(replyLimit: replyLimit, limit: limit, stallNanoseconds: stallNanoseconds)
    }

    /// The channel on `connection` closed (`reason`, wall `at`): its budget goes (writes still
    /// pending on it are failed by NIO and no longer counted).
    mutating func close(_ connection: UInt64?, peer: DeviceID, reason: String, at: Double) {
        lastClosing[peer] = Closing(reason: reason, at: at)
        guard let connection, let budget = budgets.removeValue(forKey: connection) else { return }
        if budget.wentOver { releaseWanted = true }
    }

    /// The peer was unpaired: nothing more to report about it.
    mutating func forget(_ peer: DeviceID) { lastClosing[peer] = nil }

    /// Whether a write of `traffic` may go on `connection` (one without a budget: yes).
    func admit(_ traffic: OutboundBudget.Traffic, on connection: UInt64) -> OutboundBudget.Admission {
        budgets[connection]?.admit(traffic) ?? .write
    }

    /// A write of `bytes` went to NIO on `connection` at monotonic `now`.
    mutating func queued(bytes: Int, on connection: UInt64, now: UInt64) {
        guard let index = budgets.index(forKey: connection) else { return }
        budgets.values[index].queued(bytes: bytes, now: now)
        peakCharge = max(peakCharge, budgets.values[index].charge)
    }

    /// A write of `bytes` on `connection` completed.
    mutating func written(bytes: Int, on connection: UInt64) {
        guard let index = budgets.index(forKey: connection) else { return }
        if budgets.values[index].written(bytes: bytes) { releaseWanted = true }
    }

    /// The connections whose charge has stayed over the reply limit for too long at `now`,
    /// with the seconds it has.
    func stalled(now: UInt64) -> [(connection: UInt64, seconds: Double, charge: Int)] {
        budgets.filter { $0.value.stalled(now: now) }.sorted { $0.key < $1.key }
            .map { ($0.key, $0.value.secondsOver(now: now), $0.value.charge) }
    }

    /// True once after a connection that went over its reply limit drained or closed: the
    /// memory it held is free now and worth giving back to the system.
    mutating func takeRelease() -> Bool {
        defer { releaseWanted = false }
        return releaseWanted
    }

    /// Bytes (charged) every connection holds now.
    var totalCharge: Int { budgets.values.reduce(0) { $0 + $1.charge } }

    /// The budget of `connection`, if it has one (tests, reports).
    func budget(of connection: UInt64) -> OutboundBudget? { budgets[connection] }
}
