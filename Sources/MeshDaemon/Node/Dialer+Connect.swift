import MeshCrypto
import MeshCore
import NIOCore

/// The dialer's connection drivers: tasks of the node's run loop, nonisolated, that connect,
/// move the handshake's bytes and enter the node for each decision (`MeshNode.hop`).
extension Dialer {
    /// Runs a job of the node's run loop.
    static func perform(_ job: NodeJob, on node: MeshNode) async {
        switch job {
        case .removalQuery(let peer, let addresses):
            await NodeDeviceSet.query(node, peer, at: addresses)
        case .dial(let peer):
            guard let (addresses, generation) = await node.hop({ $0.dialer.beginDial($0, peer) }) else { return }
            var failed = true
            for address in addresses where failed {
                switch await dial(node, peer, at: address) {
                case .ranAndClosed, .notNeeded: failed = false
                case .failed: continue
                }
            }
            await node.hop { [failed] in $0.dialer.dialEnded($0, peer, generation: generation, failed: failed) }
        case .dialAddresses(let peer, let addresses):
            for address in addresses {
                guard case .failed = await dial(node, peer, at: address) else { break }
            }
        case .probeAddresses(let peer, let addresses):
            await probe(node, peer, at: addresses)
        case .replaceChannel(let peer, let addresses):
            for address in addresses {
                guard case .failed = await dial(node, peer, at: .host(address), replacingLiveChannel: true, isMove: false) else { break }
            }
        case .dialRelay(let peer):
            let result: DialResult
            if let route = await node.hop({ $0.relayRoute(to: peer) }) {
                result = await dial(node, peer, at: route)
            } else {
                result = .failed
            }
            await node.hop { $0.dialer.relayDialEnded($0, peer, result: result) }
        }
    }

    /// Handshakes with `peer` at `addresses` in turn, next to its live channel, until one
    /// authenticates (the channel switches to it and is then served here) or all failed.
    static func probe(_ node: MeshNode, _ peer: DeviceID, at addresses: [DaemonConfiguration.Endpoint]) async {
        var switched = false
        for address in addresses where !switched {
            switch await dial(node, peer, at: address, replacingLiveChannel: true) {
            case .ranAndClosed: switched = true
            case .notNeeded, .failed: continue
            }
        }
        await node.hop { [switched] in $0.finder.probeEnded($0, peer, addresses: addresses, switched: switched) }
    }

    /// One outgoing attempt: open a stream path, handshake, and on success serve the channel
    /// until it closes. With `replacingLiveChannel` the attempt runs next to an active channel
    /// (an address discovery reported), and the channel switches to it only once it
    /// authenticated.
    static func dial(_ node: MeshNode, _ peer: DeviceID, at endpoint: DaemonConfiguration.Endpoint,
                     replacingLiveChannel: Bool = false) async -> DialResult {
        await dial(node, peer, at: .host(endpoint), replacingLiveChannel: replacingLiveChannel)
    }

    /// One outgoing attempt to `address`: a direct `HOST:PORT`, or the relay route to `peer`.
    /// A channel it replaces counts as the peer's move (discovery) unless `isMove` is false.
    static func dial(_ node: MeshNode, _ peer: DeviceID, at address: PathAddress,
                     replacingLiveChannel: Bool = false, isMove: Bool = true) async -> DialResult {
        var pendingHandshake: PendingInitiator?
        var result = DialResult.failed
        do {
            result = try await node.transport.dialStream(to: address, kind: .channel, timeout: .seconds(2)) { path, frames in
                guard let (message1, pending) = await node.hop({
                    $0.dialer.startHandshake($0, peer, path: path, replacingLiveChannel: replacingLiveChannel)
                }) else {
                    return .notNeeded
                }
                pendingHandshake = pending
                try await path.write(message1)
                guard case .frame(let message2)? = try await frames.next() else { return .failed }
                // Activation and what it tells discovery (a move, a static address learnt) in one
                // step, so nobody sees the channel at its new address before the move is counted.
                let outcome = await node.hop { node in
                    let outcome = node.dialer.finishHandshake(node, pending, message2: message2, path: path)
                    if case .ranAndClosed = outcome, case .host(let endpoint) = address {
                        node.finder.dialSucceeded(node, peer, at: endpoint, replacedLiveChannel: replacingLiveChannel && isMove)
                    }
                    return outcome
                }
                guard case .ranAndClosed = outcome else { return outcome }
                pendingHandshake = nil
                try? await node.pumpStream(peer: peer, connectionID: pending.connectionID, frames: &frames)
                return .ranAndClosed
            }
        } catch let error as PathConnectError {
            node.logger.trace("could not connect", metadata: ["peer.id": "\(peer.short)", "error": "\(error)"])
            return .failed
        } catch {
            node.logger.trace("outgoing connection ended", metadata: ["peer.id": "\(peer.short)", "error": "\(error)"])
        }
        if let pendingHandshake {
            let failed = if case .failed = result { true } else { false }
            await node.hop { $0.dialer.handshakeFailed($0, pendingHandshake, countFailure: failed) }
        }
        return result
    }
}
