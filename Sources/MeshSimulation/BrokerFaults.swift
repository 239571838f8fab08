/// How the simulated MQTT broker misbehaves: every fault the relay path must survive without
/// effect beyond delay (docs/SIMULATION.md, "The relay broker"). Drawn from the seed; `none`
/// is an honest broker (QoS 1 delivered once and in order per subscriber, QoS 0 too).
public struct BrokerFaults: Sendable, Equatable {
    /// Delay of one delivery, ns (publish to the subscriber's client).
    public var minimumDelay: UInt64 = 1_000_000
    public var maximumDelay: UInt64 = 3_000_000
    /// Chance that a QoS 0 message is lost (QoS 1 is never lost while both ends are connected).
    public var loss = 0.0
    /// Chance that a QoS 1 message is lost although both ends are connected: what a broker over
    /// its queue limits, or a hostile one, does (an honest broker never does; not drawn by
    /// `random`, so the campaign's seeds keep their runs).
    public var qos1Loss = 0.0
    /// Chance that a delivery is made twice (the copy up to `maximumDelay` later).
    public var duplication = 0.0
    /// Chance that a delivery is held back up to `reorderDelay` (it may overtake or be overtaken).
    public var reordering = 0.0
    public var reorderDelay: UInt64 = 50_000_000
    /// Chance per publish that an earlier message on the same topic is delivered again.
    public var replay = 0.0
    /// Chance per step that the broker goes down (every client disconnected, connects refused).
    public var outagePerStep = 0.0
    /// How long an outage lasts, ns.
    public var outageLength: ClosedRange<UInt64> = 100_000_000...2_000_000_000

    /// The largest difference between two deliveries' delays (ns): what bounds the error of a
    /// clock offset estimate taken over the relay.
    public var asymmetry: UInt64 { maximumDelay - minimumDelay + (reordering > 0 ? reorderDelay : 0) }

    /// An honest broker with a short delay.
    public static let none = BrokerFaults()

    /// Faults drawn from `random`: up to 30 % QoS 0 loss, 20 % duplication, 20 % reordering,
    /// 10 % replay, delays up to 80 ms, and outages in up to 5 % of steps.
    public static func random(using random: inout SimulationRandom) -> BrokerFaults {
        var faults = BrokerFaults()
        faults.minimumDelay = random.uint64(100_000...5_000_000)
        faults.maximumDelay = faults.minimumDelay + random.uint64(0...75_000_000)
        faults.loss = Double(random.int(0...30)) / 100
        faults.duplication = Double(random.int(0...20)) / 100
        faults.reordering = Double(random.int(0...20)) / 100
        faults.replay = Double(random.int(0...10)) / 100
        faults.outagePerStep = Double(random.int(0...5)) / 100
        return faults
    }

    /// Heavy faults for tests: 30 % QoS 0 loss, 20 % duplication, reordering and replay.
    public static let heavy = BrokerFaults(minimumDelay: 1_000_000, maximumDelay: 60_000_000, loss: 0.3, duplication: 0.2,
                                           reordering: 0.2, reorderDelay: 50_000_000, replay: 0.2)
}
