import MeshCrypto

/// Work the node's run loop starts as a child task (so it ends with `run()`).
enum NodeJob: Sendable {
    /// Try to connect a channel to the peer (its backoff, if any, has passed).
    case dial(peer: DeviceID)
    /// Try these addresses of the peer now, next to a dial already under way (discovery found
    /// them while that dial was still waiting on older addresses).
    case dialAddresses(peer: DeviceID, addresses: [DaemonConfiguration.Endpoint])
    /// Handshake with the peer at these addresses while its channel stays up (discovery says
    /// it moved); the channel switches only to a connection that authenticates.
    case probeAddresses(peer: DeviceID, addresses: [DaemonConfiguration.Endpoint])
    /// Handshake with the peer at these addresses while its channel stays up: the peer seems
    /// to hold another channel than ours (`Dialer.replaceChannel`); the channel switches only to
    /// a connection that authenticates.
    case replaceChannel(peer: DeviceID, addresses: [DaemonConfiguration.Endpoint])
    /// Open a channel to the peer through the relay (path choice: no channel for a while),
    /// next to any direct dial still under way.
    case dialRelay(peer: DeviceID)
    /// Ask a member at these addresses whether the device set removed this device
    /// (`RemovalNotice`): its handshakes have gone unanswered.
    case removalQuery(peer: DeviceID, addresses: [DaemonConfiguration.Endpoint])
}
