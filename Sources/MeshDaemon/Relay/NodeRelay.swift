import Foundation
import Logging
import MeshCore
import MeshMQTT
import NIOCore

/// The node's relay component: the broker link (created on the node's loop when the node runs)
/// and its state for `meshctl status`. Nil in a node without `relay` configured.
final class NodeRelay {
    let settings: RelaySettings
    private var password: MQTTPassword?
    private(set) var link: (any RelayBrokerConnection)?
    /// Makes the broker connections (`RelayBrokerLink.make` in the daemon).
    let brokers: any RelayBrokerFactory
    /// The store-and-forward mailbox (its own persistent broker session), set by the node
    /// before `start` (`connectRelayPeers`).
    var mailbox: RelayMailbox?
    private let logger: Logger

    /// Reads the password file now, so a bad one stops start-up with a clear error.
    init(settings: RelaySettings, logger: Logger, brokers: any RelayBrokerFactory = RelayBrokerLinkFactory()) throws(ConfigurationError) {
        self.settings = settings
        self.logger = logger
        self.brokers = brokers
        if let file = settings.passwordFile {
            password = try RelayPasswordFile.read(file)
        } else if let inline = settings.url.password {
            var bytes = Array(inline.utf8)
            password = MQTTPassword(taking: &bytes)
        }
    }

    /// Connects to the broker and keeps the connection up; on the node's loop.
    func start(loop: any EventLoop, clock: any MeshClock) throws(MQTTFailure) {
        loop.preconditionInEventLoop()
        guard link == nil else { return }
        var random = SystemRandomNumberGenerator()
        // A random client identifier per start: the broker learns nothing that names the device.
        let clientID = "sm-" + (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &random)) }.joined()
        // The mailbox's client gets a copy: each client zeroes the password it was given.
        let mailboxPassword = mailbox == nil ? nil : password?.copy()
        let link = try brokers.connection(for: RelayBrokerRequest(settings: settings, password: password, clientID: clientID, eventLoop: loop,
                                                  clock: clock, logger: logger, persistentSession: false))
        password = nil
        self.link = link
        link.start()
        try mailbox?.start(loop: loop, password: mailboxPassword)
    }

    /// Disconnects; on the node's loop.
    func stop() {
        mailbox?.stop()
        link?.stop()
        password?.zero()
        password = nil
    }

    /// The broker's state; before the node runs, "connecting".
    func status(clock: any MeshClock) -> RelayStatus {
        link?.status() ?? RelayStatus(url: settings.url.description, host: settings.url.host, state: "connecting",
                                      since: clock.wallSeconds())
    }
}

extension MeshNode {
    /// The direct transport, with the relay beside it when `relay` is configured.
    static func defaultTransport(relay: NodeRelay?, publicKey: [UInt8], clock: any MeshClock, logger: Logger) -> any NodeTransport {
        let direct = SocketTransport(logger: logger)
        guard let relay else { return direct }
        return CompositeTransport(direct: direct, relay: RelayTransport(relay: relay, ownPublicKey: publicKey, clock: clock, logger: logger))
    }

    /// The relay side of the node's transport, if it has one.
    nonisolated var relayTransport: RelayTransport? { (transport as? CompositeTransport)?.relay }

    /// Lets the relay transport read the paired devices' keys (on the loop), before it binds.
    func connectRelayPeers() {
        let keys: () -> [RelayTransport.PeerKeys] = { [weak self] in
            guard let self else { return [] }
            return self.onLoop { node in
                node.channels.peers.values.sorted { $0.record.deviceID < $1.record.deviceID }.map { runtime in
                    RelayTransport.PeerKeys(deviceID: runtime.record.deviceID, publicKey: runtime.record.publicKey,
                                            pairKey: runtime.record.pairKey)
                }
            }
        }
        relayTransport?.peerKeys = keys
        if let relay, relayTransport != nil, relay.mailbox == nil {
            let mailbox = RelayMailbox(settings: relay.settings, identity: identity.keyPair, clock: clock, logger: logger,
                                       brokers: relay.brokers)
            mailbox.peerKeys = keys
            relay.mailbox = mailbox
        }
    }

    /// The relay route to `peer` while the broker connection is up; nil without a relay. A
    /// transport with relay routes of its own (`RelayRouting`, the simulator's) is asked when
    /// no relay is configured.
    func relayRoute(to peer: DeviceID) -> PathAddress? {
        guard let relay else { return (transport as? any RelayRouting)?.relayRoute(to: peer) }
        guard relay.link?.isConnected == true, relayTransport != nil else { return nil }
        return .relay(RelayAddress(broker: relay.settings.url.host, route: .peer(peer)))
    }
}
