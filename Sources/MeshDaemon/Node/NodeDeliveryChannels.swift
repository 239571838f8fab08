import MeshCrypto
import MeshCore
import NIOCore

/// `MeshNode` as the delivery router's channel layer. The router shares the node's loop, so
/// every call runs on it synchronously (`onLoop`), without an actor hop.
final class NodeDeliveryChannels: DeliveryChannels {
    let node: MeshNode

    init(_ node: MeshNode) { self.node = node }

    var deviceID: DeviceID { node.deviceID }
    var clock: any MeshClock { node.clock }
    var loop: any EventLoop { node.loop }
    var routerExecutor: UnownedSerialExecutor { node.loop.executor.asUnownedSerialExecutor() }
    var taskExecutor: any TaskExecutor { node.taskExecutor }
    var mailbox: (any DeliveryMailbox)? { node.onLoop { $0.relay?.mailbox } }

    func sendDatagram(_ message: [UInt8], to peer: DeviceID, batched: Bool) throws {
        try node.onLoop { try $0.sendApplicationDatagram(message, to: peer, batched: batched) }
    }

    func flushDatagrams() {
        node.onLoop { $0.flushDatagrams() }
    }

    func sendStream(_ message: [UInt8], to peer: DeviceID, connection: UInt64?) throws -> EventLoopFuture<Void> {
        try node.onLoop { node in
            guard let runtime = node.channels.peers[peer] else { throw ChannelSendError(code: .unknownPeer) }
            guard runtime.channel != nil else { throw ChannelSendError(code: .notActive) }
            if let connection, runtime.connection?.id != connection { throw ChannelSendError(code: .notActive) }
            guard let written = node.sendStream(.application(message), to: peer) else { throw ChannelSendError(code: .notActive) }
            return written
        }
    }

    func sendStreamIfDraining(_ message: [UInt8], to peer: DeviceID) -> Bool {
        node.onLoop { $0.sendStreamIfDraining(message, to: peer) }
    }

    func streamConnection(of peer: DeviceID) -> UInt64? {
        node.onLoop { $0.streamConnection(of: peer) }
    }

    func linkEstimate(of peer: DeviceID) -> DeliveryLinkEstimate {
        node.onLoop { $0.linkEstimate(of: peer) }
    }

    func pairedDevices() -> [DeliveryPairedDevice] {
        node.onLoop { node in
            node.channels.peers.values.sorted { $0.record.name < $1.record.name }
                .map { DeliveryPairedDevice(deviceID: $0.record.deviceID, name: $0.record.name) }
        }
    }

    func resolvePairedPeer(_ text: String) throws -> DeviceID {
        try node.onLoop { try $0.resolvePeer(text) }
    }

    func deviceSetMembers() -> Set<DeviceID> {
        node.onLoop { node in
            let set = node.deviceSet
            guard set.enabled, !set.isRemoved else { return [] }
            return set.otherMemberIDs.filter { node.channels.peers[$0] != nil }
        }
    }

    func setInbound(_ handler: (any DeliveryInbound)?) {
        node.onLoop { $0.handOff.setHandler(handler) }
    }

    func inboundConsumed(bytes: Int) {
        node.onLoop { $0.handOff.consumed(bytes: bytes) }
    }
}
