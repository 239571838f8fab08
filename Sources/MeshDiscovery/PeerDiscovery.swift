/// A source of peer addresses: mDNS through Avahi, a static list, or several merged.
///
/// Discovery only finds addresses; it never decides trust. Whoever consumes the events (the
/// channel layer) must still run the authenticated handshake before it believes a peer is who
/// its advertisement claims. Lifecycle: call ``events()`` (as often as needed, also before
/// ``start(advertising:)``), then ``start(advertising:)`` once, ``updateAdvertisement(_:)`` any
/// number of times while running, and ``stop()`` once. A stopped instance cannot be restarted.
public protocol PeerDiscovery: Sendable {
    /// Starts browsing and, when `advertisement` is not nil, publishing it.
    ///
    /// Never fails because a backend is missing (Avahi absent is reported as an
    /// ``DiscoveryEvent/unavailable(_:)`` event and retried); throws ``DiscoveryError`` only for
    /// a caller mistake (invalid advertisement, started twice, already stopped) or when the
    /// backend cannot be set up at all.
    func start(advertising advertisement: DiscoveryAdvertisement?) async throws(DiscoveryError)

    /// Replaces what this device advertises, e.g. to turn the pairing flag on or off.
    ///
    /// `nil` withdraws the advertisement but keeps browsing. A changed instance name or port
    /// re-publishes the service; a TXT-only change (pairing flag) updates it in place.
    func updateAdvertisement(_ advertisement: DiscoveryAdvertisement?) async throws(DiscoveryError)

    /// A new stream of discovery events for one consumer.
    ///
    /// Each call returns an independent stream. It first replays the current state (availability,
    /// the published name, every service currently resolved), then delivers changes as they
    /// happen. The stream finishes after ``stop()``.
    func events() -> AsyncStream<DiscoveryEvent>

    /// Withdraws the advertisement, stops browsing, frees every resource and finishes all
    /// event streams. Safe to call more than once.
    func stop() async
}
