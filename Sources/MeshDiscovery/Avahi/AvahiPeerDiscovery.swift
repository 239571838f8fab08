import Logging
import Synchronization

/// mDNS discovery through the system's avahi-daemon (`libavahi-client`).
///
/// Publishes ``DiscoveryAdvertisement`` as a `_sessionmesh._udp` service and browses for the
/// same type, resolving every instance to IPv4 and IPv6 addresses. It never needs avahi-daemon
/// to be present: when the daemon (or D-Bus) is missing, stops or restarts, it emits
/// ``DiscoveryEvent/unavailable(_:)`` (and logs a warning once per outage), reconnects by
/// itself with bounded backoff, re-publishes and browses again, then emits
/// ``DiscoveryEvent/available``. A name already used by another device is replaced by Avahi's
/// alternative (`name #2`), reported as ``DiscoveryEvent/published(instanceName:)``.
///
/// Avahi runs on its own event-loop thread (`AvahiThreadedPoll`); the methods here lock that
/// loop for the few microseconds they touch Avahi and may be called from any task. Our own
/// advertisement is never reported back as a discovered service.
public final class AvahiPeerDiscovery: PeerDiscovery {
    /// Settings with production defaults.
    public struct Configuration: Sendable, Equatable {
        /// The DNS-SD service type SessionMesh uses.
        public static let defaultServiceType = "_sessionmesh._udp"

        /// DNS-SD service type to publish and browse.
        public var serviceType: String
        /// Whether to browse (false: publish only).
        public var browse: Bool
        /// First delay before retrying a failed connection or publication.
        public var initialRetryDelay: Duration
        /// Cap of the doubling retry delay.
        public var maximumRetryDelay: Duration

        /// Creates a configuration.
        public init(serviceType: String = Configuration.defaultServiceType, browse: Bool = true,
                    initialRetryDelay: Duration = .milliseconds(500), maximumRetryDelay: Duration = .seconds(30)) {
            self.serviceType = serviceType
            self.browse = browse
            self.initialRetryDelay = initialRetryDelay
            self.maximumRetryDelay = maximumRetryDelay
        }
    }

    private enum Phase {
        case idle
        case running(AvahiSession)
        case stopped
    }

    private let configuration: Configuration
    private let logger: Logger
    private let hub = DiscoveryEventHub()
    /// Held for every call that touches the session, so `stop` can never free it under a
    /// concurrent `updateAdvertisement`. Lock order: this, then the poll lock, then the hub.
    private let phase = Mutex(Phase.idle)

    /// Creates an idle instance; nothing touches Avahi before ``start(advertising:)``.
    public init(configuration: Configuration = Configuration(), logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    deinit {
        let session = phase.withLock { phase -> AvahiSession? in
            guard case .running(let session) = phase else { return nil }
            phase = .stopped
            return session
        }
        session?.shutdown()
        hub.finish()
    }

    /// Connects to avahi-daemon (or starts waiting for it), publishes, browses.
    ///
    /// - Throws: ``DiscoveryError/Code/alreadyStarted`` when called twice or after ``stop()``;
    ///   ``DiscoveryError/Code/backendSetupFailed`` when Avahi's event loop cannot be created.
    public func start(advertising advertisement: DiscoveryAdvertisement?) async throws(DiscoveryError) {
        try phase.withLock { phase throws(DiscoveryError) in
            guard case .idle = phase else {
                throw DiscoveryError(code: .alreadyStarted, message: "AvahiPeerDiscovery was already started; create a new instance")
            }
            guard let session = AvahiSession(configuration: configuration, hub: hub, logger: logger) else {
                throw DiscoveryError(code: .backendSetupFailed, message: "could not create the Avahi event loop (out of memory?)")
            }
            do throws(DiscoveryError) {
                try session.start(advertising: advertisement)
            } catch {
                session.shutdown()
                phase = .stopped
                hub.finish()
                throw error
            }
            phase = .running(session)
        }
    }

    /// Replaces the advertisement: TXT-only changes in place, name/port changes re-publish,
    /// `nil` withdraws it.
    ///
    /// - Throws: ``DiscoveryError/Code/notRunning`` before ``start(advertising:)`` or after ``stop()``.
    public func updateAdvertisement(_ advertisement: DiscoveryAdvertisement?) async throws(DiscoveryError) {
        try phase.withLock { phase throws(DiscoveryError) in
            guard case .running(let session) = phase else {
                throw DiscoveryError(code: .notRunning, message: "start AvahiPeerDiscovery before updating its advertisement")
            }
            try session.withPollLock { session.setAdvertisement(advertisement) }
        }
    }

    /// A new event stream; see ``PeerDiscovery/events()``.
    public func events() -> AsyncStream<DiscoveryEvent> {
        hub.subscribe()
    }

    /// Withdraws the advertisement (peers see it removed), stops the Avahi thread, frees every
    /// Avahi object and finishes the event streams. Idempotent.
    public func stop() async {
        let session = phase.withLock { phase -> AvahiSession? in
            defer { phase = .stopped }
            guard case .running(let session) = phase else { return nil }
            return session
        }
        session?.shutdown()
        hub.finish()
    }
}
