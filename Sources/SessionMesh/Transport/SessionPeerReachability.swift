/// A change in whether a peer (or a feature on it) can be reached right now.
///
/// Reachability is a lease that expires; it says nothing about what the peer has processed
/// (that is the delivery watermark, ``SessionSyncMetadata/acknowledgedSequence``).
public struct SessionPeerReachability: Sendable, Hashable, Codable {
    /// The peer whose reachability changed.
    public var peer: SessionPeer
    /// Whether it is reachable from now on.
    public var isReachable: Bool
    /// Why it changed.
    public var reason: Reason
    /// The feature concerned, or `nil` for the peer as a whole.
    public var featureID: String?

    /// Creates a change event.
    public init(peer: SessionPeer, isReachable: Bool, reason: Reason, featureID: String? = nil) {
        self.peer = peer
        self.isReachable = isReachable
        self.reason = reason
        self.featureID = featureID
    }

    /// Why reachability changed; an open set carried as a string.
    public struct Reason: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The string form, e.g. `"leaseExpired"`.
        public var rawValue: String
        /// Wraps any string.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A channel to the peer became active.
        public static let channelActivated = Reason(rawValue: "channelActivated")
        /// The channel to the peer closed.
        public static let channelClosed = Reason(rawValue: "channelClosed")
        /// The peer's lease expired without renewal.
        public static let leaseExpired = Reason(rawValue: "leaseExpired")
        /// The counterpart app attached or detached on the peer.
        public static let appAttachmentChanged = Reason(rawValue: "appAttachmentChanged")
        /// The device set added the peer (another member paired it).
        public static let deviceAdded = Reason(rawValue: "deviceAdded")
        /// The device set removed the peer.
        public static let deviceRemoved = Reason(rawValue: "deviceRemoved")
        /// A test network partitioned or healed the link.
        public static let partition = Reason(rawValue: "partition")
        /// The raw value.
        public var description: String { rawValue }
    }
}
