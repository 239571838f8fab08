import Foundation

// What the daemon's control plane reports (`MeshControlPlane`: status, peers, pairing, ping).
// The local API sends these values as they are, JSON-encoded, to `meshctl` and apps (see
// docs/LOCAL-API.md): the JSON keys are the property names below and are part of the
// documented interface.

/// State of the encrypted channel to one paired device.
public enum ChannelState: String, Codable, Sendable, Equatable {
    /// A handshake completed and both paths have keys.
    case active
    /// A handshake or reconnect is in progress.
    case connecting
    /// No channel and no attempt under way right now (the peer is away or unknown).
    case down
}

/// How an address of a peer was learned.
public enum AddressSource: String, Codable, Sendable, Equatable {
    /// Given on the command line or in the config file.
    case `static`
    /// Found by mDNS discovery.
    case mdns
    /// Learned from an authenticated packet or connection of that peer.
    case observed
    /// Given while pairing (`meshctl pair CODE --address`).
    case pairing
    /// Passed on by another member of the device set (where that member reached it).
    case member
}

/// One known address of a peer and how it was learned.
public struct PeerAddress: Codable, Sendable, Equatable {
    /// `HOST:PORT` (IPv6 as `[addr]:port`).
    public var address: String
    /// Where the daemon learned it.
    public var source: AddressSource

    /// Creates an address record.
    public init(address: String, source: AddressSource) {
        self.address = address
        self.source = source
    }
}

/// The daemon's own identity and health, as `meshctl status` shows it.
public struct DaemonStatus: Codable, Sendable, Equatable {
    /// This device's ID (full grouped form).
    public var deviceID: String
    /// This device's human name.
    public var name: String
    /// UDP+TCP listen address, `HOST:PORT`.
    public var listen: String
    /// Local API socket path.
    public var socket: String
    /// Seconds since the daemon started.
    public var uptimeSeconds: Double
    /// Named counters (handshakes, packets dropped, pending drops, …).
    public var counters: [String: UInt64]
    /// The daemon's release version (`SessionMeshVersion.current` of its build); nil from a
    /// daemon whose status did not carry it.
    public var version: String?
    /// The relay broker and the daemon's connection to it; nil when no relay is configured.
    public var relay: RelayStatus?
    /// The device set this daemon is in; nil when `device_set = false` (or from older daemons).
    public var deviceSet: DeviceSetStatus?

    /// Creates a status value; `version` is this build's unless given.
    public init(deviceID: String, name: String, listen: String, socket: String,
                uptimeSeconds: Double, counters: [String: UInt64],
                version: String? = SessionMeshVersion.current, relay: RelayStatus? = nil, deviceSet: DeviceSetStatus? = nil) {
        self.deviceID = deviceID
        self.name = name
        self.listen = listen
        self.socket = socket
        self.uptimeSeconds = uptimeSeconds
        self.counters = counters
        self.version = version
        self.relay = relay
        self.deviceSet = deviceSet
    }
}

/// One paired device, as `meshctl peers` shows it.
public struct PeerStatus: Codable, Sendable, Equatable {
    /// The peer's device ID (full grouped form).
    public var deviceID: String
    /// The peer's name, as it gave it while pairing.
    public var name: String
    /// Known addresses and how each was learned.
    public var addresses: [PeerAddress]
    /// Channel state.
    public var channel: ChannelState
    /// When the last handshake completed, if ever (seconds since 1970).
    public var lastHandshake: Double?
    /// Smoothed round-trip time in milliseconds, when measured.
    public var rttMilliseconds: Double?
    /// Estimated clock offset (peer minus local) in milliseconds, when estimated.
    public var clockOffsetMilliseconds: Double?
    /// Error bound of the clock offset estimate in milliseconds.
    public var clockOffsetErrorMilliseconds: Double?
    /// When the reachability lease expires (seconds since 1970); nil when not reachable.
    public var leaseExpires: Double?
    /// Whether the peer counts as reachable now.
    public var reachable: Bool
    /// When the last authenticated packet of the peer arrived (seconds since 1970), if any
    /// arrived since the daemon started; absent from replies of daemons that predate it.
    public var lastSeen: Double?
    /// The peer's `HOST:PORT` the active channel sends datagrams to; nil without a channel.
    public var path: String?
    /// Why the last channel to the peer closed (e.g. "the peer did not read for 5 s"), if one
    /// closed since the daemon started; absent from replies of daemons that predate it.
    public var lastCloseReason: String?
    /// When that channel closed (seconds since 1970).
    public var lastClosed: Double?
    /// How the device came to be known: `paired here`, `paired here (single)` (only these two,
    /// `meshctl pair --single`) or `added by NAME` (another member of the device set added it).
    public var joined: String?
    /// The device ID of the member that added it, when `joined` is `added by NAME`.
    public var addedBy: String?

    /// Creates a peer status value.
    public init(deviceID: String, name: String, addresses: [PeerAddress], channel: ChannelState,
                lastHandshake: Double? = nil, rttMilliseconds: Double? = nil,
                clockOffsetMilliseconds: Double? = nil, clockOffsetErrorMilliseconds: Double? = nil,
                leaseExpires: Double? = nil, reachable: Bool = false, lastSeen: Double? = nil, path: String? = nil,
                lastCloseReason: String? = nil, lastClosed: Double? = nil, joined: String? = nil, addedBy: String? = nil) {
        self.deviceID = deviceID
        self.name = name
        self.addresses = addresses
        self.channel = channel
        self.lastHandshake = lastHandshake
        self.rttMilliseconds = rttMilliseconds
        self.clockOffsetMilliseconds = clockOffsetMilliseconds
        self.clockOffsetErrorMilliseconds = clockOffsetErrorMilliseconds
        self.leaseExpires = leaseExpires
        self.reachable = reachable
        self.lastSeen = lastSeen
        self.path = path
        self.lastCloseReason = lastCloseReason
        self.lastClosed = lastClosed
        self.joined = joined
        self.addedBy = addedBy
    }
}

/// The device set as one member sees it (`meshctl status`).
public struct DeviceSetStatus: Codable, Sendable, Equatable {
    /// Members, this device included (0 when this device was removed).
    public var size: Int
    /// Records in the roster.
    public var records: Int
    /// Hex of the roster digest: two members with the same digest have the same roster.
    public var digest: String
    /// Whether another member removed this device from the set.
    public var removed: Bool
    /// The device ID of the member that removed it, when known.
    public var removedBy: String?
    /// When it was removed (seconds since 1970, the remover's clock).
    public var removedAt: Double?

    public init(size: Int, records: Int, digest: String, removed: Bool, removedBy: String? = nil, removedAt: Double? = nil) {
        self.size = size
        self.records = records
        self.digest = digest
        self.removed = removed
        self.removedBy = removedBy
        self.removedAt = removedAt
    }
}

/// A live pairing code the daemon is accepting.
public struct PairingInvitation: Codable, Sendable, Equatable {
    /// The typable code to show the user. Never logged.
    public var code: String
    /// When it stops being accepted (seconds since 1970).
    public var expires: Double

    /// Creates an invitation value.
    public init(code: String, expires: Double) {
        self.code = code
        self.expires = expires
    }
}

/// The device a pairing completed with.
public struct PairedDevice: Codable, Sendable, Equatable {
    /// The new peer's device ID.
    public var deviceID: String
    /// The new peer's name.
    public var name: String
    /// The short verification string both sides show; the user compares them.
    public var verification: String
    /// How the pairing exchange reached the other device: `address` (the joiner's
    /// `--address`), `lan` (found over mDNS), `direct` (the inviter's side of a direct TCP
    /// connection), `relay` (through the relay broker). Absent from older daemons.
    public var via: String?

    /// Creates a paired-device value.
    public init(deviceID: String, name: String, verification: String, via: String? = nil) {
        self.deviceID = deviceID
        self.name = name
        self.verification = verification
        self.via = via
    }
}

/// How a pairing exchange reached the other device (`PairedDevice.via`).
public enum PairingRoute: String, Codable, Sendable, CaseIterable {
    /// The joiner dialled the `--address` it was given.
    case address
    /// The joiner found the inviter over mDNS on the local network.
    case lan
    /// The inviter accepted a direct TCP connection.
    case direct
    /// Through the relay broker's rendezvous topics.
    case relay
}

/// Which channel path a ping measured.
public enum PingPath: String, Codable, Sendable, Equatable, CaseIterable {
    /// The UDP datagram path.
    case datagram
    /// The TCP stream path.
    case stream
}

/// Round-trip figures for one path.
public struct PingPathReport: Codable, Sendable, Equatable {
    /// The path measured.
    public var path: PingPath
    /// Probes sent.
    public var sent: Int
    /// Replies received in time.
    public var received: Int
    /// Minimum round trip, microseconds.
    public var minMicroseconds: Double?
    /// Median round trip, microseconds.
    public var p50Microseconds: Double?
    /// 99th percentile round trip, microseconds.
    public var p99Microseconds: Double?
    /// Maximum round trip, microseconds.
    public var maxMicroseconds: Double?

    /// Creates a report.
    public init(path: PingPath, sent: Int, received: Int, minMicroseconds: Double?,
                p50Microseconds: Double?, p99Microseconds: Double?, maxMicroseconds: Double?) {
        self.path = path
        self.sent = sent
        self.received = received
        self.minMicroseconds = minMicroseconds
        self.p50Microseconds = p50Microseconds
        self.p99Microseconds = p99Microseconds
        self.maxMicroseconds = maxMicroseconds
    }
}

/// Result of `meshctl ping`.
public struct PingReport: Codable, Sendable, Equatable {
    /// The device pinged.
    public var deviceID: String
    /// One entry per path.
    public var paths: [PingPathReport]

    /// Creates a report.
    public init(deviceID: String, paths: [PingPathReport]) {
        self.deviceID = deviceID
        self.paths = paths
    }
}
