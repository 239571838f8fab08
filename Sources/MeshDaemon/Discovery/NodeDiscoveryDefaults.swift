import Logging
import MeshCrypto
import MeshDiscovery

/// How the node sets up discovery: which backends `meshd` runs, and what it advertises.
enum NodeDiscoveryDefaults {
    /// Discovery as `meshd` runs it: Avahi merged with the static peers.
    ///
    /// Avahi is left out when `mdns` is off, and when the daemon listens on a loopback address
    /// (`127.0.0.0/8`, `::1`, `localhost`): no other device could reach it there, so announcing
    /// it on the network would only mislead (and test daemons stay off the LAN).
    static func discovery(for configuration: DaemonConfiguration, logger: Logger) -> any PeerDiscovery {
        let staticPeers = StaticPeerDiscovery(
            peers: configuration.staticPeers.map { StaticPeer(host: $0.host, port: UInt16(clamping: $0.port)) },
            logger: logger)
        guard configuration.mdns else { return staticPeers }
        guard !isLoopback(configuration.listen.host) else {
            logger.info("mDNS off: the daemon listens on a loopback address", metadata: ["listen": "\(configuration.listen)"])
            return staticPeers
        }
        return MergedPeerDiscovery([AvahiPeerDiscovery(logger: logger), staticPeers])
    }

    /// True for `127.0.0.0/8`, `::1` and `localhost`.
    static func isLoopback(_ host: String) -> Bool {
        let lowered = host.lowercased()
        return lowered == "localhost" || lowered == "::1" || lowered == "0:0:0:0:0:0:0:1" || lowered.hasPrefix("127.")
    }

    /// What a daemon named `name`, bound to `port`, advertises: name, port, device-ID hint, and
    /// `pairingHint` (the live code's public hint) while a code accepts attempts. Nil before the
    /// port is bound.
    static func advertisement(name: String, port: Int?, deviceID: DeviceID, pairingHint: String?) -> DiscoveryAdvertisement? {
        guard let port, let udpPort = UInt16(exactly: port), udpPort != 0 else { return nil }
        return try? DiscoveryAdvertisement(instanceName: instanceName(name), port: udpPort,
                                           deviceIDHint: DiscoveryAdvertisement.deviceIDHint(for: deviceID.description),
                                           pairingHint: pairingHint)
    }

    /// The configured name cut to DNS-SD's 63 bytes.
    static func instanceName(_ name: String) -> String {
        var out = ""
        for character in name where out.utf8.count + character.utf8.count <= 63 { out.append(character) }
        return out.isEmpty ? "sessionmesh" : out
    }
}
