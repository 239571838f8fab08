/// Something discovery learned or a change in its ability to learn.
public enum DiscoveryEvent: Sendable, Equatable {
    /// A service was resolved, or its addresses or TXT data changed. Carries the full, current
    /// view of that service (not a delta); replaces any earlier value with the same
    /// ``DiscoveredService/instanceName`` and ``DiscoveredService/source``.
    case resolved(DiscoveredService)
    /// The service with this instance name, learned from `source`, is no longer advertised.
    case removed(instanceName: String, source: DiscoverySource)
    /// The mDNS backend (avahi-daemon) is reachable; browsing and publishing run.
    case available
    /// The mDNS backend is not reachable. Discovery retries by itself; static peers keep
    /// working. Every service learned over mDNS is forgotten without individual
    /// ``removed(instanceName:source:)`` events and is reported again once resolved anew;
    /// a consumer should keep using the addresses it already has meanwhile.
    case unavailable(DiscoveryUnavailableReason)
    /// This device's advertisement is live on the network under `instanceName`, which differs
    /// from the requested name when another device already used it (a name collision).
    case published(instanceName: String)
}

/// How a service's addresses were learned; `meshctl peers` shows it.
public enum DiscoverySource: String, Sendable, Hashable, Codable {
    /// Multicast DNS through Avahi.
    case mdns
    /// The static peer list in the configuration.
    case staticConfiguration = "static"
}
