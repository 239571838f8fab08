/// `MeshNode` as its transports' datagram receiver: each datagram is opened on the node's loop
/// synchronously (`onLoop`), where the transport read it, without a task or a copy.
final class NodeDatagramReceiver: DatagramReceiver {
    let node: MeshNode

    init(_ node: MeshNode) { self.node = node }

    func receive(_ datagram: UnsafeRawBufferPointer, from source: PathAddress) {
        // Used synchronously on this thread, inside the transport's buffer scope.
        nonisolated(unsafe) let bytes = datagram
        node.onLoop { $0.handleDatagram(bytes, from: source) }
    }

    func burstEnded() {
        node.onLoop { $0.handOff.burstEnded() }
    }
}
