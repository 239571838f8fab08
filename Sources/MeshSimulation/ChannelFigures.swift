/// What the daemons' real channel layers went through in a run (summed over daemons and
/// incarnations): proof that handshakes, rekeys, lease expiry and moves happened.
public struct ChannelFigures: Sendable, Equatable, CustomStringConvertible {
    public var handshakes: UInt64 = 0
    public var rekeys: UInt64 = 0
    public var leasesExpired: UInt64 = 0
    /// Message 1s refused as not newer than the last confirmed one of their device.
    public var replaysRefused: UInt64 = 0

    public init() {}

    public static func + (a: ChannelFigures, b: ChannelFigures) -> ChannelFigures {
        var sum = a
        sum.handshakes += b.handshakes
        sum.rekeys += b.rekeys
        sum.leasesExpired += b.leasesExpired
        sum.replaysRefused += b.replaysRefused
        return sum
    }

    public var description: String {
        "\(handshakes) handshakes, \(rekeys) rekeys, \(leasesExpired) leases expired, \(replaysRefused) replays refused"
    }
}
