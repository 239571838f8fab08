import MeshCrypto
import MeshCore

/// An application message received on a channel (the delivery router consumes these).
public struct InboundChannelMessage: Sendable, Equatable {
    /// The paired device that sent it (authenticated by the channel).
    public var peer: DeviceID
    /// The path it arrived on.
    public var path: PingPath
    /// The message bytes, exactly as the peer passed them to `send`.
    public var bytes: [UInt8]

    /// Creates a value (the node makes these; fakes in tests too).
    public init(peer: DeviceID, path: PingPath, bytes: [UInt8]) {
        self.peer = peer
        self.path = path
        self.bytes = bytes
    }
}

/// A change of a peer's channel.
public enum PeerChannelEvent: Sendable, Equatable {
    /// A handshake completed; both paths can carry messages now.
    case activated(DeviceID)
    /// The channel closed (connection lost, lease expired, keys expired, unpaired…).
    case deactivated(DeviceID, reason: String)
    /// A device was paired.
    case paired(DeviceID)
    /// A device was unpaired (here or by the peer).
    case unpaired(DeviceID)
    /// Another member of the device set added a device: a peer from now on, as if paired.
    case memberAdded(DeviceID)
    /// The device set removed a device: forgotten, as if unpaired.
    case memberRemoved(DeviceID)
}
