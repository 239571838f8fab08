import MeshCore

// JSON bodies of the control operations. Keys are the property names; docs/LOCAL-API.md shows
// each with an example. Fields marked optional may be left out.

/// `hello` request: who is asking. Every field is optional; the body may be empty.
public struct HelloRequest: Codable, Sendable, Equatable {
    /// A free-form client name (e.g. `meshctl`); informational, the daemon does not record it.
    public var client: String?
    /// The framing version the client speaks.
    public var protocolVersion: Int?

    /// Creates a request.
    public init(client: String? = nil, protocolVersion: Int? = Int(LocalAPIWireFormat.version)) {
        self.client = client
        self.protocolVersion = protocolVersion
    }
}

/// `hello` reply: what the daemon speaks.
public struct HelloReply: Codable, Sendable, Equatable {
    /// Framing version of the daemon.
    public var protocolVersion: Int
    /// `meshd`.
    public var daemon: String
    /// The daemon's release version.
    public var daemonVersion: String
    /// Largest body the daemon accepts, in bytes.
    public var maximumBodyLength: Int
    /// Names of the operations the daemon implements (`status`, `pair.create`, …).
    public var operations: [String]
    /// The caller's uid as the daemon saw it (`SO_PEERCRED`), when known.
    public var uid: UInt32?

    /// Creates a reply.
    public init(protocolVersion: Int, daemon: String, daemonVersion: String, maximumBodyLength: Int,
                operations: [String], uid: UInt32?) {
        self.protocolVersion = protocolVersion
        self.daemon = daemon
        self.daemonVersion = daemonVersion
        self.maximumBodyLength = maximumBodyLength
        self.operations = operations
        self.uid = uid
    }
}

/// `peers` reply.
public struct PeersReply: Codable, Sendable, Equatable {
    /// Every paired device.
    public var peers: [PeerStatus]
    /// Creates a reply.
    public init(peers: [PeerStatus]) { self.peers = peers }
}

/// `pair.create` request.
public struct PairCreateRequest: Codable, Sendable, Equatable {
    /// Seconds the code stays valid; the daemon's `pairing_code_lifetime` when absent.
    public var validFor: Double?
    /// `true`: a device that is already paired may pair again with this code, replacing its
    /// pairing. Absent or `false`: such a device is refused (`already-paired`).
    public var replace: Bool?
    /// `true`: the device that pairs with this code is paired with this one only and does not
    /// join the device set. Absent or `false`: it joins the set.
    public var single: Bool?
    /// Creates a request.
    public init(validFor: Double? = nil, replace: Bool? = nil, single: Bool? = nil) {
        self.validFor = validFor
        self.replace = replace
        self.single = single
    }
}

/// `pair.wait` and `pair.cancel` request.
public struct PairCodeRequest: Codable, Sendable, Equatable {
    /// The code `pair.create` returned.
    public var code: String
    /// Creates a request.
    public init(code: String) { self.code = code }
}

/// `pair.join` request.
public struct PairJoinRequest: Codable, Sendable, Equatable {
    /// The code the other device shows.
    public var code: String
    /// The other daemon's `HOST:PORT` (IPv6 as `[addr]:port`); absent: find it over mDNS by
    /// the code's public hint.
    public var address: String?
    /// `true`: when this daemon is already paired with the inviter, replace that pairing.
    /// Absent or `false`: refuse (`already-paired`) and keep the existing one.
    public var replace: Bool?
    /// `true`: pair with the inviter only; neither joins the other's device set.
    public var single: Bool?
    /// Creates a request.
    public init(code: String, address: String?, replace: Bool? = nil, single: Bool? = nil) {
        self.code = code
        self.address = address
        self.replace = replace
        self.single = single
    }
}

/// `unpair` request.
public struct UnpairRequest: Codable, Sendable, Equatable {
    /// Full or short device ID of the paired device.
    public var deviceID: String
    /// Creates a request.
    public init(deviceID: String) { self.deviceID = deviceID }
}

/// `ping` request.
public struct PingRequest: Codable, Sendable, Equatable {
    /// Full or short device ID of the paired device.
    public var deviceID: String
    /// Probes per path, 1–10000; 10 when absent.
    public var count: Int?
    /// Creates a request.
    public init(deviceID: String, count: Int? = nil) {
        self.deviceID = deviceID
        self.count = count
    }

    /// Allowed `count` values.
    public static let countRange = 1...10_000
    /// `count` when absent.
    public static let defaultCount = 10
}

/// The empty JSON object `{}`: the reply of `pair.cancel` and `unpair`.
public struct EmptyBody: Codable, Sendable, Equatable {
    /// Creates an empty body.
    public init() {}
}

/// Body of the `events.dropped` event: events shed because the client read too slowly.
public struct EventsDroppedEvent: Codable, Sendable, Equatable {
    /// Events dropped since the previous `events.dropped` event.
    public var dropped: UInt64
    /// Creates an event body.
    public init(dropped: UInt64) { self.dropped = dropped }
}
