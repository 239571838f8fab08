import MeshCrypto
import MeshCore
import NIOCore

/// The channel layer as the delivery router sees it: this device, time, where the router runs,
/// sending to paired peers, and the one inbound path (`setInbound`).
///
/// In a daemon `MeshNode` provides it (`NodeDeliveryChannels`); the deterministic simulator
/// provides its own over a simulated network. Every method is called on `loop` (the router's
/// executor runs there too in a daemon), synchronously: nothing here suspends, so a router
/// driven by hand on one thread stays on it.
package protocol DeliveryChannels: AnyObject, Sendable {
    /// This device's ID.
    var deviceID: DeviceID { get }
    /// Monotonic and wall time (virtual in the simulator).
    var clock: any MeshClock { get }
    /// The loop that runs the router's timers (`scheduleTask`) and loop work (`execute`).
    var loop: any EventLoop { get }
    /// The router actor's executor. In a daemon the loop's own, so the router, the node and the
    /// socket writes share one thread; the simulator passes a hand-run serial executor.
    var routerExecutor: UnownedSerialExecutor { get }
    /// The task executor the router's child tasks prefer (the loop's in a daemon).
    var taskExecutor: any TaskExecutor { get }

    /// Sends one datagram message (best effort). Throws `ChannelSendError`. It leaves at once,
    /// unless `batched`: then it waits for the caller's `flushDatagrams()`, with the rest of
    /// the caller's batch.
    func sendDatagram(_ message: [UInt8], to peer: DeviceID, batched: Bool) throws
    /// The batched datagrams `sendDatagram` wrote and that still wait leave now, together. A
    /// caller that batches calls it once its batch is written.
    func flushDatagrams()
    /// Sends one message on `peer`'s stream, in order; the future completes once it was written
    /// (or failed). With `connection`, only on that connection (see `streamConnection(of:)`).
    /// Throws `ChannelSendError` when nothing was sent.
    func sendStream(_ message: [UInt8], to peer: DeviceID, connection: UInt64?) throws -> EventLoopFuture<Void>
    /// Sends on the stream without waiting; false (nothing sent) without an active channel or
    /// when the connection does not drain.
    func sendStreamIfDraining(_ message: [UInt8], to peer: DeviceID) -> Bool
    /// The id of the connection carrying `peer`'s active channel now; nil when none is active.
    func streamConnection(of peer: DeviceID) -> UInt64?
    /// Latest round trip and clock offset (peer minus local) of `peer`, when measured.
    func linkEstimate(of peer: DeviceID) -> DeliveryLinkEstimate
    /// Every paired device, sorted by name.
    func pairedDevices() -> [DeliveryPairedDevice]
    /// Resolves a full or short device ID (or unique prefix) among paired devices.
    func resolvePairedPeer(_ text: String) throws -> DeviceID

    /// Installs (or, with nil, removes) the consumer of everything peers send and of channel
    /// events. What arrived while none was installed is handed to the next one first, in order.
    func setInbound(_ handler: (any DeliveryInbound)?)
    /// A message the handler queued (`receive` returned false) has been handled: the channel
    /// layer's bounded inbound queue has room for it again.
    func inboundConsumed(bytes: Int)
    /// The store-and-forward mailbox at the relay broker, if the node has one (a default
    /// returns nil: `DeliveryMailbox.swift`).
    var mailbox: (any DeliveryMailbox)? { get }
    /// The other members of this device's device set (docs/DEVICE-SET.md); empty when the set
    /// is off, this device was removed from it, or it has no other member (a default returns
    /// none: `DeliveryMailbox.swift`). The session owner hand-over runs among them.
    func deviceSetMembers() -> Set<DeviceID>
}

/// The one inbound path from the channel layer to the router. Called on the loop, in arrival
/// order; a peer's messages keep their order.
package protocol DeliveryInbound: AnyObject, Sendable {
    /// A message from a peer. True when handled completely now; false when queued: the
    /// channel layer counts it against its inbound bound until `inboundConsumed(bytes:)`.
    func receive(_ message: InboundChannelMessage) -> Bool
    /// A channel came up or went down, or a device was paired or unpaired.
    func channelEvent(_ event: PeerChannelEvent)
    /// The datagrams of one socket read have all been received (what they produced can be
    /// written out now).
    func inboundBurstEnded()
}

/// Round trip and clock offset of a peer's channel, nanoseconds, when measured.
package struct DeliveryLinkEstimate: Sendable, Equatable {
    package var roundTripNanoseconds: Int64?
    package var offsetNanoseconds: Int64?

    package init(roundTripNanoseconds: Int64?, offsetNanoseconds: Int64?) {
        self.roundTripNanoseconds = roundTripNanoseconds
        self.offsetNanoseconds = offsetNanoseconds
    }
}

/// A paired device: its full ID and the name it paired with.
package struct DeliveryPairedDevice: Sendable, Equatable {
    package var deviceID: DeviceID
    package var name: String

    package init(deviceID: DeviceID, name: String) {
        self.deviceID = deviceID
        self.name = name
    }
}
