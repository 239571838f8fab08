import CAvahiClient
import Logging
import Synchronization

/// Owns every Avahi C object of one ``AvahiPeerDiscovery`` and reacts to Avahi's callbacks.
///
/// Threading contract (why this is `@unchecked Sendable`):
/// - All mutable state below is touched only while the `AvahiThreadedPoll` lock is held:
///   either on the poll's own thread (Avahi calls every callback with the lock held), or from
///   another thread inside ``withPollLock(_:)``. Before the poll thread starts and after it
///   stopped, the one caller holding the session is the only thread touching it.
/// - Callbacks never call back into ``AvahiPeerDiscovery`` and never take the poll lock; they
///   only update state here and yield events to the ``DiscoveryEventHub`` (its own lock, taken
///   after the poll lock, never the other way round).
/// - C callbacks find this object through an unretained pointer; the owner keeps it alive
///   until ``shutdown()`` has stopped the thread and freed every C object.
///
/// Ownership: resolvers, the browser and the entry group are freed before the client that
/// created them, the retry timer before the poll, the poll last.
final class AvahiSession: @unchecked Sendable {
    let poll: OpaquePointer
    let hub: DiscoveryEventHub
    let logger: Logger
    let configuration: AvahiPeerDiscovery.Configuration

    // Guarded by the threaded-poll lock (see the type's comment).
    var client: OpaquePointer?
    var group: OpaquePointer?
    var browser: OpaquePointer?
    var resolvers: [MDNSServiceTable.InstanceKey: OpaquePointer] = [:]
    var table = MDNSServiceTable()
    /// SRV target of each instance's last resolution (to notice an instance moving hosts).
    var resolvedHostNames: [MDNSServiceTable.InstanceKey: String] = [:]
    /// Every port this session advertised; with our host name they identify our own service.
    var advertisedPorts: Set<UInt16> = []
    var advertisement: DiscoveryAdvertisement?
    /// The instance name in use: the advertisement's, or an alternative after a collision.
    var publishedName: String?
    /// The TXT strings the entry group holds now, as committed or last updated; nil while the
    /// group holds nothing.
    var committedTXT: [String]?
    private var timer: OpaquePointer?
    private var retryDelayMilliseconds: UInt32
    private var needsReconnect = false
    private var threadStarted = false
    private var isShutDown = false
    /// Makes ``shutdown()`` run once even if called again (the poll is freed by then).
    private let shutdownStarted = Atomic<Bool>(false)

    /// Creates the event loop (not yet running); nil when Avahi cannot allocate it.
    init?(configuration: AvahiPeerDiscovery.Configuration, hub: DiscoveryEventHub, logger: Logger) {
        guard let poll = avahi_threaded_poll_new() else { return nil }
        self.poll = poll
        self.hub = hub
        self.logger = logger
        self.configuration = configuration
        self.retryDelayMilliseconds = configuration.initialRetryMilliseconds
    }

    /// The opaque pointer handed to C callbacks.
    var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// The session behind a C callback's `userdata`.
    static func from(_ userdata: UnsafeMutableRawPointer?) -> AvahiSession? {
        userdata.map { Unmanaged<AvahiSession>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Runs `body` with the event loop locked. Never call it from an Avahi callback.
    func withPollLock<R>(_ body: () throws(DiscoveryError) -> R) throws(DiscoveryError) -> R {
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        return try body()
    }

    /// Connects (or schedules retries) and starts the event-loop thread.
    func start(advertising advertisement: DiscoveryAdvertisement?) throws(DiscoveryError) {
        self.advertisement = advertisement
        publishedName = advertisement?.instanceName
        if let advertisement { advertisedPorts.insert(advertisement.port) }
        logger.info("mDNS discovery starting", metadata: [
            "service.type": "\(configuration.serviceType)",
            "advertising": "\(advertisement?.instanceName ?? "-")",
        ])
        connect()
        guard avahi_threaded_poll_start(poll) >= 0 else {
            tearDownClient()
            throw DiscoveryError(code: .backendSetupFailed,
                                 message: "could not start the Avahi event-loop thread (out of threads or memory?)")
        }
        threadStarted = true
    }

    /// Stops the thread, frees every C object in order and finally the poll. Idempotent; never
    /// call it from an Avahi callback.
    func shutdown() {
        guard !shutdownStarted.exchange(true, ordering: .acquiringAndReleasing) else { return }
        avahi_threaded_poll_lock(poll)
        isShutDown = true  // callbacks still queued on the poll thread see this and do nothing
        avahi_threaded_poll_unlock(poll)
        if threadStarted { _ = avahi_threaded_poll_stop(poll) }
        // The thread has been joined: this is the only thread touching the session now.
        tearDownClient()
        if let timer, let api = avahi_threaded_poll_get(poll) { api.pointee.timeout_free?(timer) }
        timer = nil
        avahi_threaded_poll_free(poll)
        logger.info("mDNS discovery stopped")
    }

    // MARK: Client lifecycle (poll lock held)

    /// Creates the client with `AVAHI_CLIENT_NO_FAIL`, so a missing daemon means CONNECTING
    /// (it connects when the daemon appears) rather than an error. A NULL client (no D-Bus)
    /// is retried with backoff.
    private func connect() {
        var error: Int32 = 0
        let created = avahi_client_new(avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL, { c, state, userdata in
            AvahiSession.from(userdata)?.clientStateChanged(c, state)
        }, userdata, &error)
        if let created {
            client = created
            return
        }
        // avahi_client_new freed the half-built client and everything made in our callback.
        client = nil
        group = nil
        browser = nil
        resolvers.removeAll()
        resolvedHostNames.removeAll()
        table.removeAll()
        reportUnavailable(code: .busUnreachable,
                          message: "cannot reach avahi-daemon over the D-Bus system bus (Avahi: \(AvahiSession.describe(error))); is dbus running? Retrying with backoff; static peers keep working")
        scheduleRetry(growing: true)
    }

    private func clientStateChanged(_ c: OpaquePointer?, _ state: AvahiClientState) {
        guard let c, !isShutDown else { return }
        if client == nil { client = c }
        guard client == c else { return }
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            retryDelayMilliseconds = configuration.initialRetryMilliseconds
            if hub.markAvailable() {
                logger.info("avahi-daemon available; mDNS discovery running")
            }
            publishIfNeeded()
            browseIfNeeded()
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The host name is being (re-)established: withdraw, re-publish once RUNNING.
            logger.debug("avahi-daemon is registering its host name; withdrawing until it runs")
            if let group { resetGroup(group) }
        case AVAHI_CLIENT_CONNECTING:
            reportUnavailable(code: .daemonNotRunning,
                              message: "avahi-daemon is not running (nobody owns org.freedesktop.Avahi on the system bus); waiting for it. Static peers keep working")
        case AVAHI_CLIENT_FAILURE:
            let error = avahi_client_errno(c)
            needsReconnect = true
            if error == Int32(AVAHI_ERR_DISCONNECTED) {
                reportUnavailable(code: .disconnected, message: "avahi-daemon went away (stopped or restarting); reconnecting")
                scheduleRetry(afterMilliseconds: 0)
            } else {
                reportUnavailable(code: .failed, message: "Avahi client failed: \(AvahiSession.describe(error)); retrying")
                scheduleRetry(growing: true)
            }
        default:
            break
        }
    }

    /// Reports an outage once per outage (warning), later attempts only at debug level.
    func reportUnavailable(code: DiscoveryUnavailableReason.Code, message: String) {
        table.removeAll()
        let reason = DiscoveryUnavailableReason(code: code, message: message)
        if hub.markUnavailable(reason, forgetting: .mdns) {
            logger.warning("mDNS discovery unavailable", metadata: ["reason": "\(reason)"])
        } else {
            logger.debug("mDNS discovery still unavailable", metadata: ["reason": "\(reason)"])
        }
    }

    /// Frees resolvers, browser, entry group and client, children first.
    private func tearDownClient() {
        freeBrowsing()
        if let group { avahi_entry_group_free(group) }
        group = nil
        if let client { avahi_client_free(client) }
        client = nil
    }

    /// True when the client is connected to a running daemon.
    var isRunning: Bool {
        guard let client else { return false }
        return avahi_client_get_state(client) == AVAHI_CLIENT_S_RUNNING
    }

    // MARK: Retry timer (poll lock held)

    /// Arms the single retry timer with the current backoff, doubling it when `growing`.
    func scheduleRetry(growing: Bool) {
        let delay = retryDelayMilliseconds
        if growing {
            retryDelayMilliseconds = min(configuration.maximumRetryMilliseconds, max(1, retryDelayMilliseconds) * 2)
        }
        scheduleRetry(afterMilliseconds: delay)
    }

    private func scheduleRetry(afterMilliseconds delay: UInt32) {
        guard !isShutDown, let api = avahi_threaded_poll_get(poll) else { return }
        var when = timeval()
        avahi_elapse_time(&when, delay, 0)
        if let timer {
            api.pointee.timeout_update?(timer, &when)
        } else {
            timer = api.pointee.timeout_new?(api, &when, { _, userdata in
                AvahiSession.from(userdata)?.retryTimerFired()
            }, userdata)
        }
        logger.debug("mDNS retry scheduled", metadata: ["delay.ms": "\(delay)"])
    }

    private func retryTimerFired() {
        guard !isShutDown else { return }
        if needsReconnect || client == nil {
            needsReconnect = false
            tearDownClient()
            connect()
            return
        }
        if isRunning {
            publishIfNeeded()
            browseIfNeeded()
        }
    }

    /// Avahi's text for an error code.
    static func describe(_ error: Int32) -> String {
        guard let text = avahi_strerror(error) else { return "error \(error)" }
        return String(cString: text)
    }
}

extension AvahiPeerDiscovery.Configuration {
    var initialRetryMilliseconds: UInt32 { Self.milliseconds(initialRetryDelay) }
    var maximumRetryMilliseconds: UInt32 { max(initialRetryMilliseconds, Self.milliseconds(maximumRetryDelay)) }

    private static func milliseconds(_ d: Duration) -> UInt32 {
        let (seconds, attoseconds) = d.components
        let ms = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        return UInt32(clamping: max(1, ms))
    }
}
