import Foundation

/// One device (more exactly, one installation of one app on one device) taking part in a session.
///
/// `id` is the identity the engine uses: it must be stable for the lifetime of an install and
/// unique among the peers of a session, because every envelope and snapshot names its origin by
/// `id` (``SessionSyncMetadata/sourcePeerID``) and the engine tracks sequences per `id`.
public struct SessionPeer: Sendable, Hashable, Codable {
    /// Stable per-install identifier; compared byte for byte.
    public var id: String
    /// What kind of device this is (phone, watch, desktop, …); informational.
    public var deviceClass: DeviceClass
    /// Identifies one running instance of the app, so a relaunch can be told apart from the
    /// process it replaced.
    public var appInstanceID: String
    /// The account the peer acts for, when the app has one.
    public var userID: String?
    /// How this peer is connected to the local one.
    public var topology: Topology

    /// Creates a peer description; the parameters are the seed's fields in the seed's order.
    public init(
        id: String,
        deviceClass: DeviceClass,
        appInstanceID: String,
        userID: String? = nil,
        topology: Topology = .pairedCompanion
    ) {
        self.id = id
        self.deviceClass = deviceClass
        self.appInstanceID = appInstanceID
        self.userID = userID
        self.topology = topology
    }
}

extension SessionPeer {
    /// An open set of device kinds, carried as a string so new kinds never break old peers.
    public struct DeviceClass: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The string carried on the wire, e.g. `"phone"`.
        public var rawValue: String
        /// Wraps any string; unknown kinds are kept as they are.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A phone.
        public static let phone = DeviceClass(rawValue: "phone")
        /// A watch.
        public static let watch = DeviceClass(rawValue: "watch")
        /// A tablet.
        public static let tablet = DeviceClass(rawValue: "tablet")
        /// A laptop or desktop computer.
        public static let desktop = DeviceClass(rawValue: "desktop")
        /// A headless machine (a server, a single-board computer, a container).
        public static let server = DeviceClass(rawValue: "server")
        /// The kind is not known.
        public static let unknown = DeviceClass(rawValue: "unknown")
        /// The raw value.
        public var description: String { rawValue }
    }

    /// How a peer is reachable from the local device; an open set like ``DeviceClass``.
    public struct Topology: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The string carried on the wire, e.g. `"pairedCompanion"`.
        public var rawValue: String
        /// Wraps any string; unknown topologies are kept as they are.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A device paired one-to-one with this one (the seed's typical case).
        public static let pairedCompanion = Topology(rawValue: "pairedCompanion")
        /// A device on the same local network, reached through the mesh daemon.
        public static let localNetwork = Topology(rawValue: "localNetwork")
        /// Another app on the same host.
        public static let sameHost = Topology(rawValue: "sameHost")
        /// The raw value.
        public var description: String { rawValue }
    }
}
