import MeshCore
import MeshDaemon
import NIOCore

/// The channel layer of one simulated daemon incarnation: the router's `DeliveryChannels` over
/// the `SimulatedNetwork`, in place of `MeshNode`.
///
/// What it replaces: the handshake, encryption, keepalives, leases and reconnection of real
/// channels. A channel here is active exactly while the network has a connection between the two
/// daemons; its round trip is twice the link's typical delay and its clock offset estimate is
/// the true difference of the two daemons' skews.
final class SimulatedChannels: DeliveryChannels, @unchecked Sendable {
    let index: Int
    let deviceID: DeviceID
    let meshClock: SimulatedMeshClock
    let simulatedLoop: SimulatedEventLoop
    let network: SimulatedNetwork
    let deviceIDs: [DeviceID]
    /// Their textual forms (formatting a device ID is not cheap).
    let deviceKeys: [String]
    let skews: [Double]
    private var inbound: (any DeliveryInbound)?
    /// What arrived while no handler was installed, handed to the next one first.
    private var held: [NetworkEvent] = []
    /// Bytes of messages the router queued and has not consumed yet (its memory per peer).
    private(set) var queuedInboundBytes = 0
    private(set) var queuedInboundPeak = 0
    /// Batched datagrams sent since the router last flushed. The network carries each at once,
    /// but a daemon's socket holds them until the flush: the simulation checks that none waits
    /// once the loops are idle.
    private(set) var batchedDatagramsWaiting = 0

    init(index: Int, deviceIDs: [DeviceID], clock: SimulatedMeshClock, loop: SimulatedEventLoop, network: SimulatedNetwork,
         skews: [Double]) {
        self.index = index
        self.deviceID = deviceIDs[index]
        self.deviceIDs = deviceIDs
        self.deviceKeys = deviceIDs.map(\.description)
        self.meshClock = clock
        self.simulatedLoop = loop
        self.network = network
        self.skews = skews
    }

    var clock: any MeshClock { meshClock }
    var loop: any EventLoop { simulatedLoop }
    var routerExecutor: UnownedSerialExecutor { simulatedLoop.asUnownedSerialExecutor() }
    var taskExecutor: any TaskExecutor { simulatedLoop }

    private func peerIndex(_ peer: DeviceID) throws -> Int {
        guard let found = deviceIDs.firstIndex(of: peer), found != index else { throw SimulatedChannelError.unknownPeer }
        return found
    }

    func sendDatagram(_ message: [UInt8], to peer: DeviceID, batched: Bool) throws {
        guard message.count <= MeshNode.maximumDatagramMessage else { throw SimulatedChannelError.tooLargeForDatagram }
        guard network.send(from: index, to: try peerIndex(peer), bytes: message, path: .datagram) else {
            throw SimulatedChannelError.notActive
        }
        // An unbatched datagram leaves with the batched ones written before it (one flush).
        batchedDatagramsWaiting = batched ? batchedDatagramsWaiting + 1 : 0
    }

    /// The simulated network delivers each datagram as it is sent; this only settles the count
    /// of those that would still wait in a daemon's socket.
    func flushDatagrams() { batchedDatagramsWaiting = 0 }

    func sendStream(_ message: [UInt8], to peer: DeviceID, connection: UInt64?) throws -> EventLoopFuture<Void> {
        guard network.send(from: index, to: try peerIndex(peer), bytes: message, path: .stream, connection: connection) else {
            throw SimulatedChannelError.notActive
        }
        return simulatedLoop.makeSucceededFuture(())
    }

    func sendStreamIfDraining(_ message: [UInt8], to peer: DeviceID) -> Bool {
        guard let target = try? peerIndex(peer) else { return false }
        return network.send(from: index, to: target, bytes: message, path: .stream)
    }

    func streamConnection(of peer: DeviceID) -> UInt64? {
        guard let target = try? peerIndex(peer) else { return nil }
        return network.connection(index, target)
    }

    func linkEstimate(of peer: DeviceID) -> DeliveryLinkEstimate {
        guard let target = try? peerIndex(peer), network.connection(index, target) != nil else {
            return DeliveryLinkEstimate(roundTripNanoseconds: nil, offsetNanoseconds: nil)
        }
        let rtt = Int64(clamping: network.quality(index, target).typicalDelay * 2)
        return DeliveryLinkEstimate(roundTripNanoseconds: rtt, offsetNanoseconds: Int64((skews[target] - skews[index]) * 1e9))
    }

    func pairedDevices() -> [DeliveryPairedDevice] {
        deviceIDs.indices.filter { $0 != index }.map { DeliveryPairedDevice(deviceID: deviceIDs[$0], name: "d\($0)") }
    }

    func resolvePairedPeer(_ text: String) throws -> DeviceID {
        let matches = deviceKeys.indices.filter { $0 != index && (deviceKeys[$0] == text || "d\($0)" == text) }
        guard matches.count == 1, let match = matches.first else { throw SimulatedChannelError.unknownPeer }
        return deviceIDs[match]
    }

    func setInbound(_ handler: (any DeliveryInbound)?) {
        inbound = handler
        guard handler != nil else { return }
        let waiting = held
        held.removeAll()
        for event in waiting { deliver(event) }
    }

    func inboundConsumed(bytes: Int) { queuedInboundBytes -= bytes }

    /// Hands a network event to the router (held until it installed its handler).
    func deliver(_ event: NetworkEvent) {
        guard let inbound else {
            held.append(event)
            return
        }
        switch event {
        case .message(let from, _, let bytes, let path, _):
            let message = InboundChannelMessage(peer: deviceIDs[from], path: path == .datagram ? .datagram : .stream, bytes: bytes)
            if !inbound.receive(message) {
                queuedInboundBytes += bytes.count
                queuedInboundPeak = max(queuedInboundPeak, queuedInboundBytes)
            }
            if path == .datagram { inbound.inboundBurstEnded() }
        case .channelUp(_, let peer, _):
            inbound.channelEvent(.activated(deviceIDs[peer]))
        case .channelDown(_, let peer):
            inbound.channelEvent(.deactivated(deviceIDs[peer], reason: "simulated link down"))
        }
    }
}

/// Why a simulated channel refused a send.
enum SimulatedChannelError: Error, Sendable {
    case unknownPeer
    case notActive
    case tooLargeForDatagram
}
