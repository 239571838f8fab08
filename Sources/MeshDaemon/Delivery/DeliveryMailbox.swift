import MeshCore
import MeshCrypto

/// The store-and-forward mailbox as the delivery router sees it: sealed boxes to a paired
/// device that wait at the relay broker while it is away (docs/PROTOCOL.md §11, "Mailbox
/// boxes"), and the boxes it left for this device.
///
/// In a daemon with `relay` configured, `RelayMailbox` provides it; without a relay (and in the
/// simulator) there is none. Every method is called on the router's loop, synchronously.
package protocol DeliveryMailbox: AnyObject, Sendable {
    /// Whether boxes for `peer` can be posted now, and the broker session they go to; nil when
    /// not (no broker connection, or the peer is not paired).
    func postingState(for peer: DeviceID) -> MailboxPostingState?
    /// The largest plaintext one box carries.
    var maximumPlaintextBytes: Int { get }
    /// Seals `plaintext` as a box of `kind` for `peer` and publishes it (QoS 1). False when
    /// nothing was published.
    func post(_ plaintext: [UInt8], kind: MailboxSeal.Kind, to peer: DeviceID) -> Bool
    /// Installs (or, with nil, removes) the consumer of the boxes that open.
    func setInbound(_ handler: (any DeliveryMailboxInbound)?)
}

/// Where the router's posts go.
package struct MailboxPostingState: Sendable, Equatable {
    /// Changes whenever the broker may have lost what was posted before (a connection on which
    /// it no longer held this device's session): posted items are then posted again.
    package var epoch: UInt64
    /// The connection has been up long enough for the boxes the broker kept for this device
    /// (acks above all) to have arrived: before that, the router posts nothing, so a device
    /// coming back does not post again what its peer acknowledged while it was away.
    package var settled: Bool

    package init(epoch: UInt64, settled: Bool) {
        self.epoch = epoch
        self.settled = settled
    }
}

/// Receives the boxes of paired devices that opened, on the loop, in arrival order.
package protocol DeliveryMailboxInbound: AnyObject, Sendable {
    /// The plaintext of one box of `kind` that `peer` sealed for this device.
    func mailboxReceived(_ plaintext: [UInt8], kind: MailboxSeal.Kind, from peer: DeviceID)
}

extension DeliveryChannels {
    /// No mailbox: the simulator's channels and nodes without a relay.
    package var mailbox: (any DeliveryMailbox)? { nil }
    /// No device set: the simulator's channels (session owner hand-over stays off).
    package func deviceSetMembers() -> Set<DeviceID> { [] }
}
