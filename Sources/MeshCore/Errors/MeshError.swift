/// A request the daemon refused or could not carry out: what kind of failure, and a sentence a
/// person can act on.
///
/// The daemon's control plane (pairing, unpair, ping) and its delivery router throw this; the
/// local API turns each ``Kind`` into its documented wire code in one place
/// (`LocalAPIErrorMapping` in MeshDaemon's `LocalAPI/`), so nothing below that edge knows a wire
/// code. ``message`` is sent to the client as it is: it never contains a secret.
public struct MeshError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure. Each maps to one local API code (docs/LOCAL-API.md).
    public enum Kind: Sendable, Hashable, CaseIterable {
        // Requests and peers.
        /// A bad argument in a request.
        case invalidArgument
        /// The device ID is not a paired device.
        case unknownPeer
        /// The peer has no active channel.
        case peerNotActive
        /// The daemon is not running its network service (yet, or any more).
        case notRunning
        /// The daemon is stopping; the request was ended.
        case stopping
        /// A component that runs once was asked to run again.
        case alreadyRan

        // Pairing.
        /// The code expired before a device paired.
        case pairingExpired
        /// The code saw too many failed attempts and is no longer accepted.
        case pairingCodeInvalidated
        /// The code already paired a device; codes are single use.
        case pairingCodeUsed
        /// As many attempts run as the code has failures left; a new one must wait.
        case pairingBusy
        /// A newer code replaced this one.
        case pairingReplaced
        /// The code was withdrawn.
        case pairingCancelled
        /// The pairing protocol failed (the code did not match, or a malformed message).
        case pairingFailed
        /// The inviting daemon ended the pairing without completing it.
        case pairingRefused
        /// The pairing code was mistyped (check character mismatch).
        case invalidCode
        /// No daemon answered at the address given.
        case unreachable
        /// The other device is already paired with this one and `replace` was not asked for.
        case alreadyPaired
        /// Pairing by code without an address needs discovery, which is off.
        case discoveryOff
        /// No inviting device shows the code's hint on this network.
        case inviterNotFound
        /// Several inviting devices show the hint and the ones tried did not pair.
        case inviterAmbiguous

        // Delivery.
        /// The durable queue (or the disk) is full; nothing already queued was lost.
        case queueFull
        /// No such item (an empty snapshot slot, an unknown queued item).
        case notFound
        /// The session was closed; a new session needs a new UUID.
        case sessionClosed
        /// The daemon's durable store failed.
        case storeFailed
        /// The daemon runs without the delivery router.
        case deliveryUnavailable
        /// The connection already has the most attachments one connection may have.
        case tooManyAttachments
        /// The caller's uid may not use the feature.
        case featureNotAllowed
    }

    /// The kind of failure.
    public var kind: Kind
    /// A sentence a person can act on. Never contains a secret.
    public var message: String

    /// Creates an error of `kind` saying `message`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// `message`.
    public var description: String { message }
}
