@testable import MeshDaemon
import MeshCrypto
import NIOCore

/// Read-only views of a node for the tests.
extension MeshNode {
    /// Local and remote address of the TCP connection carrying the channel to `peer`.
    func channelConnectionEndpoints(_ peer: DeviceID) -> (local: SocketAddress?, remote: SocketAddress?)? {
        guard let connection = channels.peers[peer]?.connection, channels.peers[peer]?.channel != nil else { return nil }
        let channel = (connection.path as? TCPStreamPath)?.channel
        return (channel?.localAddress, channel?.remoteAddress)
    }

    /// TCP connections open now (authenticated or not), listener excluded.
    func openConnectionCount() -> Int { gate.table.open.count }
}

extension MeshNode {
    /// The stored record of a paired device (tests craft handshakes with its pair key).
    func pairedRecord(_ peer: DeviceID) -> PairedPeer? { channels.peers[peer]?.record }
}

extension MeshNode {
    /// Makes this node ignore every received datagram (tests simulate a network that filters
    /// UDP but passes TCP).
    func ignoreDatagramsForTesting(_ ignore: Bool) { ignoresDatagrams = ignore }
}

extension MeshNode {
    /// The session index datagrams to this node from `peer` carry now.
    func currentLocalIndex(of peer: DeviceID) -> UInt32? { channels.peers[peer]?.channel?.current.localIndex }
}
