import Logging
import MeshCrypto
import MeshCore
import NIOCore

/// Accepted stream paths: admission, preamble, then the responder side of the channel handshake
/// (I/O here, decisions in `PeerChannels`) or pairing (`PairingInviterExchange`).
extension ConnectionGate {
    /// One accepted stream path (the transport closes it when this returns): admission,
    /// preamble, then a channel handshake or pairing.
    static func serveInbound(_ path: any ChannelPath, frames: inout PathFrames, node: MeshNode) async {
        guard let admission = await node.hop({ $0.gate.admit($0, path) }) else { return }
        do {
            switch try await frames.next() {
            case .preamble(.channel)? where path.remote.isRendezvous:
                break  // a rendezvous carries pairing only
            case .preamble(.channel)?: try await respondToChannel(admission, node: node, frames: &frames)
            case .preamble(.pairing)?: try await PairingInviterExchange(host: node, logger: node.logger).serve(admission, frames: &frames)
            case .preamble(.removalQuery)? where !admission.path.remote.isRendezvous:
                guard case .frame(let query)? = try await frames.next(),
                      let reply = await node.hop({ $0.deviceSet.answerRemovalQuery($0, query) }) else { break }
                try await admission.path.write(try WireFrame.encode(reply))
            case .preamble(.removalQuery)?: break
            case .frame?, nil: break
            }
        } catch let error as WireFormatError {
            await node.hop { $0.counters.connectionsBadPreamble += 1 }
            node.logger.trace("closed a connection that sent bad framing", metadata: ["error": "\(error)"])
        } catch {
            node.logger.trace("inbound connection ended", metadata: ["error": "\(error)"])
        }
        await node.hop { $0.gate.ended(admission.id) }
    }

    /// The responder side of a channel handshake on an accepted connection, then the stream.
    static func respondToChannel(_ admission: InboundAdmission, node: MeshNode,
                                 frames: inout PathFrames) async throws {
        guard case .frame(let message1)? = try await frames.next() else { return }
        guard let (reply, pending) = await node.hop({ $0.gate.answerHandshake($0, message1, admission: admission) }) else { return }
        try await admission.path.write(reply)
        let next: WireFrame?
        do {
            next = try await frames.next()
        } catch {
            await node.hop { $0.gate.responderEnded($0, pending, admission: admission) }
            throw error
        }
        guard case .frame(let confirm)? = next else {
            await node.hop { $0.gate.responderEnded($0, pending, admission: admission) }
            return
        }
        guard await node.hop({ $0.gate.completeResponder($0, pending, confirmFrame: confirm, admission: admission) }) else {
            await node.hop { $0.channels.responderAbandoned(pending) }
            return
        }
        try await node.pumpStream(peer: pending.peer, connectionID: admission.id, frames: &frames)
    }

    /// Answers the first frame (message 1 and its `HandshakeMac`): framed message 2, or nil
    /// when `PeerChannels.answerHandshake` refused it (the caller closes without a byte).
    /// The connection is engaged and gets the handshake deadline.
    func answerHandshake(_ node: isolated MeshNode, _ firstFrame: [UInt8], admission: InboundAdmission) -> ([UInt8], PendingResponder)? {
        guard node.phase == .running else { return nil }
        switch node.channels.answerHandshake(firstFrame, connectionID: admission.id,
                                             kind: admission.path.remote.isRelay ? .relay : .direct, udpPort: node.announcedUDPPort,
                                             wall: node.clock.wallNanoseconds(), now: node.clock.monotonicNanoseconds()) {
        case .reply(let message2, let pending):
            engage(node, admission.id, path: admission.path, deadline: node.tuning.handshakeTimeout)
            return (message2, pending)
        case .refused(let refusal):
            node.counters.count(refusal)
            let logger = node.logger
            switch refusal {
            case .unknownKey:
                logger.debug("refused a handshake no paired device's key made", metadata: ["source": "\(admission.source.host)"])
            case .busy:
                logger.debug("refused a handshake: the handshake budget is spent", metadata: ["source": "\(admission.source.host)"])
            case .peerBusy:
                logger.debug("refused a handshake: that device's handshake budget is spent", metadata: ["source": "\(admission.source.host)"])
            case .seen:
                logger.debug("refused a copy of a handshake seen before", metadata: ["source": "\(admission.source.host)"])
            case .future(let peer, let suppressed?):
                logger.warning("refused a handshake stamped more than an hour ahead of this device's clock; check both clocks",
                               metadata: ["peer.id": "\(peer.short)", "suppressed": "\(suppressed)"])
            case .lostSimultaneousConnect(let peer):
                logger.debug("kept own connection over the peer's simultaneous one", metadata: ["peer.id": "\(peer.short)"])
                // The peer may have lost the channel we keep: our own handshake wins on both sides.
                node.dialer.replaceChannel(node, peer, besides: admission.id)
            case .failed, .replay, .future(_, nil), .gone: break
            }
            return nil
        }
    }

    /// The connection ended after message 2, before the initiator's `confirm`: the initiator
    /// may have activated the channel we never will. When we still hold an older channel to
    /// that peer, the two sides now hold different channels: handshake again at once
    /// (`Dialer.replaceChannel`) instead of waiting for a lease to run out.
    /// Only for the channel held when message 2 was written (`PendingResponder.heldConnectionID`):
    /// one installed since may be what made the initiator give its attempt up.
    func responderEnded(_ node: isolated MeshNode, _ pending: PendingResponder, admission: InboundAdmission) {
        node.channels.responderAbandoned(pending)
        guard let held = pending.heldConnectionID, node.channels.peers[pending.peer]?.connection?.id == held else { return }
        node.dialer.replaceChannel(node, pending.peer, besides: admission.id)
    }

    /// Opens the initiator's first stream frame; a valid `confirm` activates the channel.
    func completeResponder(_ node: isolated MeshNode, _ pending: PendingResponder, confirmFrame: [UInt8],
                           admission: InboundAdmission) -> Bool {
        guard node.phase == .running else { return false }
        switch node.channels.confirmResponder(pending, confirmFrame: confirmFrame) {
        case .refused(let refusal):
            node.counters.count(refusal)
            if case .lostSimultaneousConnect(let peer) = refusal { node.dialer.replaceChannel(node, peer, besides: admission.id) }
            return false
        case .confirmed(let channel):
            authenticated(admission.id)
            let endpoint = admission.source.datagramEndpoint(announcedPort: pending.udpPort)
            let learned = endpoint.map { learnObservedAddress(node, $0, for: pending.peer) } ?? false
            // The confirmed timestamp is stored (a replay of this message 1 stays refused
            // after a restart); learning an address saved it already.
            if !learned { node.persistPeers() }
            node.activate(pending.peer, channel: channel,
                          connection: ChannelConnection(id: admission.id, path: admission.path, locallyInitiated: false),
                          datagramEndpoint: endpoint)
            return true
        }
    }

    /// Records `endpoint` (IP of the connection, announced port) as an observed address;
    /// whether it was new (the store was saved then). A relay address is no observed address.
    @discardableResult
    func learnObservedAddress(_ node: isolated MeshNode, _ endpoint: PathAddress, for peer: DeviceID) -> Bool {
        guard let direct = endpoint.directEndpoint else { return false }
        let text = direct.description
        guard node.channels.peers[peer]?.record.learn(address: text, source: .observed) == true else { return false }
        node.persistPeers()
        return true
    }
}
