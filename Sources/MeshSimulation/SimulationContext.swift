import Foundation

/// What every part of one run shares: the clock, the expectations, the checks, the trace and the
/// violations found. One thread uses it (the simulation's), hence `@unchecked Sendable`: the
/// tasks that touch it run on `SimulatedEventLoop`s, which run on that thread only.
public final class SimulationContext: @unchecked Sendable {
    public let seed: UInt64
    public let clock: VirtualClock
    public var ledger: SimulationLedger
    public var checker: SimulationChecker
    public var trace = SimulationTrace()
    public private(set) var violations: [SimulationViolation] = []
    /// The step being run (for the trace).
    public var step = 0
    /// Each daemon's device ID, as the routers name peers (`from` of events, send targets).
    public let deviceKeys: [String]
    /// Each daemon's true wall clock skew, seconds.
    public let skews: [Double]
    /// Anchors set: (session, revision) → (setter, start instant on the setter's clock, seconds).
    public var anchorsSet: [String: (setter: Int, start: Double)] = [:]
    /// How far a received anchor may be from the setter's beyond the offset estimate's error,
    /// seconds (rounding).
    public var anchorTolerance = 0.002
    /// The worst delay asymmetry of any link so far, ns: the offset estimate (from keepalive
    /// round trips) errs by at most half of it.
    public var linkAsymmetry: () -> UInt64 = { 0 }
    /// The error bound daemon `receiver`'s node states for its estimate of `sender`'s clock
    /// offset, seconds (0 before a sample): a round trip that queued behind other traffic
    /// widens it, and the true offset lies within it.
    public var offsetErrorBound: (_ receiver: Int, _ sender: Int) -> Double = { _, _ in 0 }
    /// The daemon a member removed from the device set in this run, if any
    /// (`Simulation+Membership.swift`), and since when every other member has heard of it.
    public var removedDaemon: Int?
    public var removalKnownAt: UInt64?
    /// Whether daemon `receiver`'s node has measured `sender`'s clock offset yet.
    public var offsetKnown: (_ receiver: Int, _ sender: Int) -> Bool = { _, _ in true }
    /// Anchors that reached an app before its daemon had measured the setter's clock offset
    /// (converted with no offset; left out of the check, counted for the summary).
    public var anchorsBeforeOffset = 0
    private var attachments = 0

    /// A new attachment generation, unique in the run and growing.
    public func nextAttachment() -> Int {
        attachments += 1
        return attachments
    }

    /// Counts for the summary.
    public var itemsSent = 0, itemsDelivered = 0, faults = 0

    public init(seed: UInt64, clock: VirtualClock, daemons: Int, deviceKeys: [String], skews: [Double]) {
        self.seed = seed
        self.clock = clock
        self.ledger = SimulationLedger(daemons: daemons)
        self.checker = SimulationChecker(daemons: daemons)
        self.deviceKeys = deviceKeys
        self.skews = skews
    }

    /// The daemon whose device ID is `key`, nil for one the simulation does not know.
    public func daemon(named key: String) -> Int? { deviceKeys.firstIndex(of: key) }

    /// Notes `text` in the trace at the current step and time.
    public func note(_ text: String) {
        trace.record(step: step, milliseconds: clock.milliseconds, text)
    }

    /// Records violations (noted in the trace too).
    public func fail(_ found: [SimulationViolation]) {
        for violation in found {
            violations.append(violation)
            note("VIOLATION \(violation)")
        }
    }

    public var failed: Bool { !violations.isEmpty }
}
