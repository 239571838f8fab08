/// A peer's service as discovery currently sees it: name, TXT hints and every known address.
///
/// The hints come from the network unauthenticated. Use ``deviceIDHint`` only to choose
/// which paired device to try; the handshake decides who it really is.
public struct DiscoveredService: Sendable, Hashable {
    /// DNS-SD instance name (or the configured name of a static peer).
    public var instanceName: String
    /// Where this came from.
    public var source: DiscoverySource
    /// TXT `v=`, when present.
    public var protocolVersion: Int?
    /// TXT `id=`: short device-ID hint, when present.
    public var deviceIDHint: String?
    /// TXT `pair=`: non-nil while the device accepts a pairing.
    public var pairingHint: String?
    /// The mDNS host name the service points at (e.g. `alice.local`); nil for static peers.
    public var hostName: String?
    /// Every address the service is reachable at, sorted, without duplicates. Never empty in a
    /// ``DiscoveryEvent/resolved(_:)`` event.
    public var addresses: [DiscoveredAddress]

    /// Creates a service value.
    public init(instanceName: String, source: DiscoverySource, protocolVersion: Int? = nil,
                deviceIDHint: String? = nil, pairingHint: String? = nil, hostName: String? = nil,
                addresses: [DiscoveredAddress]) {
        self.instanceName = instanceName
        self.source = source
        self.protocolVersion = protocolVersion
        self.deviceIDHint = deviceIDHint
        self.pairingHint = pairingHint
        self.hostName = hostName
        self.addresses = addresses
    }

    /// True while the device accepts a pairing.
    public var acceptsPairing: Bool { pairingHint != nil }

    /// True when the advertised device-ID hint fits `deviceID` (a paired device's full ID).
    ///
    /// Only a filter for which paired device to try: anyone can advertise any hint, so the
    /// handshake must still prove the identity. False when the service has no hint.
    public func hintMatches(deviceID: String) -> Bool {
        guard let deviceIDHint else { return false }
        return DiscoveryAdvertisement.deviceIDHint(for: deviceID) == deviceIDHint.uppercased()
    }

    /// Names of the network interfaces the service was seen on (empty for static peers).
    public var interfaceNames: [String] {
        var seen = Set<String>()
        return addresses.compactMap(\.interfaceName).filter { seen.insert($0).inserted }
    }
}

/// One address a service is reachable at.
public struct DiscoveredAddress: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Address family of ``host``.
    public enum Family: String, Sendable, Hashable, Codable {
        /// `host` is a dotted IPv4 literal.
        case ipv4
        /// `host` is an IPv6 literal, without brackets or scope.
        case ipv6
        /// `host` is a DNS name the caller must resolve (static peers only).
        case hostName
    }

    /// IP literal (or host name for ``Family/hostName``).
    public var host: String
    /// UDP/TCP port.
    public var port: UInt16
    /// Family of ``host``.
    public var family: Family
    /// Interface the address was learned on; required as the scope of a link-local IPv6
    /// address (`fe80::…`). Nil for static peers.
    public var interfaceIndex: Int32?
    /// Name of that interface (e.g. `eth0`), when known.
    public var interfaceName: String?

    /// Creates an address value.
    public init(host: String, port: UInt16, family: Family, interfaceIndex: Int32? = nil, interfaceName: String? = nil) {
        self.host = host
        self.port = port
        self.family = family
        self.interfaceIndex = interfaceIndex
        self.interfaceName = interfaceName
    }

    /// True for an IPv6 link-local address, which needs ``interfaceIndex`` to be used.
    public var isLinkLocalIPv6: Bool {
        family == .ipv6 && host.lowercased().hasPrefix("fe8")
    }

    /// `HOST:PORT`, `[V6]:PORT` or `[V6%IFACE]:PORT` for link-local.
    public var description: String {
        switch family {
        case .ipv6:
            let scope = isLinkLocalIPv6 ? (interfaceName.map { "%\($0)" } ?? interfaceIndex.map { "%\($0)" } ?? "") : ""
            return "[\(host)\(scope)]:\(port)"
        case .ipv4, .hostName:
            return "\(host):\(port)"
        }
    }

    /// Orders IPv4 before IPv6 before names, then by host, port and interface.
    public static func < (lhs: DiscoveredAddress, rhs: DiscoveredAddress) -> Bool {
        func rank(_ f: Family) -> Int { f == .ipv4 ? 0 : (f == .ipv6 ? 1 : 2) }
        if rank(lhs.family) != rank(rhs.family) { return rank(lhs.family) < rank(rhs.family) }
        if lhs.host != rhs.host { return lhs.host < rhs.host }
        if lhs.port != rhs.port { return lhs.port < rhs.port }
        return (lhs.interfaceIndex ?? -1) < (rhs.interfaceIndex ?? -1)
    }
}
