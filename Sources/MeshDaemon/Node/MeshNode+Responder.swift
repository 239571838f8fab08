import MeshCrypto
import MeshCore
import NIOCore

/// The responder side of the channel handshake: I/O here, decisions in `PeerChannels`.
extension MeshNode {
    /// The responder side of a channel handshake on an accepted connection, then the stream.
    nonisolated func respondToChannel(_ admission: InboundAdmission,
                                      frames: inout NIOAsyncChannelInboundStream<WireFrame>.AsyncIterator) async throws {
        guard case .frame(let message1)? = try await frames.next() else { return }
        guard let (reply, pending) = await answerHandshake(message1, admission: admission) else { return }
        try await admission.channel.writeAndFlush(ByteBuffer(bytes: reply))
        guard case .frame(let confirm)? = try await frames.next(),
              await completeResponder(pending, confirmFrame: confirm, admission: admission) else {
            await handshakeAbandoned(pending)
            return
        }
        try await pumpStream(peer: pending.peer, connectionID: admission.id, frames: &frames)
    }

    /// Answers the first frame (message 1 and its `HandshakeMac`): framed message 2, or nil
    /// when `PeerChannels.answerHandshake` refused it (the caller closes without a byte).
    /// The connection is engaged and gets the handshake deadline.
    func answerHandshake(_ firstFrame: [UInt8], admission: InboundAdmission) -> ([UInt8], PendingResponder)? {
        guard phase == .running else { return nil }
        switch channels.answerHandshake(firstFrame, connectionID: admission.id, udpPort: announcedUDPPort,
                                        wall: clock.wallNanoseconds(), now: clock.monotonicNanoseconds()) {
        case .reply(let message2, let pending):
            engage(admission.id, channel: admission.channel, deadline: tuning.handshakeTimeout)
            return (message2, pending)
        case .refused(let refusal):
            counters.count(refusal)
            switch refusal {
            case .unknownKey:
                logger.debug("refused a handshake no paired device's key made", metadata: ["source": "\(admission.sourceIP)"])
            case .busy:
                logger.debug("refused a handshake: the handshake budget is spent", metadata: ["source": "\(admission.sourceIP)"])
            case .future(let peer, let suppressed?):
                logger.warning("refused a handshake stamped more than an hour ahead of this device's clock; check both clocks",
                               metadata: ["peer.id": "\(peer.short)", "suppressed": "\(suppressed)"])
            case .lostSimultaneousConnect(let peer):
                logger.debug("kept own connection over the peer's simultaneous one", metadata: ["peer.id": "\(peer.short)"])
            case .failed, .replay, .future(_, nil), .gone: break
            }
            return nil
        }
    }

    /// Opens the initiator's first stream frame; a valid `confirm` activates the channel.
    func completeResponder(_ pending: PendingResponder, confirmFrame: [UInt8], admission: InboundAdmission) -> Bool {
        guard phase == .running else { return false }
        switch channels.confirmResponder(pending, confirmFrame: confirmFrame) {
        case .refused(let refusal):
            counters.count(refusal)
            return false
        case .confirmed(let channel):
            markAuthenticated(admission.id)
            var endpoint: SocketAddress?
            if let ip = admission.channel.remoteAddress?.ipAddress, pending.udpPort != 0 {
                endpoint = try? SocketAddress(ipAddress: ip, port: Int(pending.udpPort))
                if let endpoint { learnObservedAddress(endpoint, for: pending.peer) }
            }
            activate(pending.peer, channel: channel,
                     connection: ChannelConnection(id: admission.id, channel: admission.channel, locallyInitiated: false),
                     datagramEndpoint: endpoint)
            return true
        }
    }

    /// A responder whose initiator never confirmed: free its index.
    func handshakeAbandoned(_ pending: PendingResponder) { channels.responderAbandoned(pending) }

    /// Records `endpoint` (IP of the connection, announced port) as an observed address.
    func learnObservedAddress(_ endpoint: SocketAddress, for peer: DeviceID) {
        guard let ip = endpoint.ipAddress, let port = endpoint.port else { return }
        let text = DaemonConfiguration.Endpoint(host: ip, port: port).description
        guard channels.peers[peer]?.record.learn(address: text, source: .observed) == true else { return }
        persistPeers()
    }
}
