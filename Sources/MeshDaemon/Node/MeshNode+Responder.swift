import MeshCrypto
import MeshCore
import NIOCore

/// A responder that answered message 1 and waits for the initiator's `confirm`.
struct PendingResponder: Sendable {
    let peer: DeviceID
    var channel: ActiveChannel
    /// Initiator's announced UDP port.
    let udpPort: UInt16
    let connectionID: UInt64
    /// The initiator's timestamp: recorded as the peer's latest only once it confirmed.
    let initiatorTimestamp: Int64
}

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

    /// Reads the first frame (message 1 and its `HandshakeMac`): a MAC no paired device's key
    /// makes, an exhausted handshake budget, replay, a losing simultaneous connect or any
    /// failure returns nil (the caller closes without a byte). Otherwise returns framed
    /// message 2. The MAC is checked before any X25519 is spent.
    func answerHandshake(_ firstFrame: [UInt8], admission: InboundAdmission) -> ([UInt8], PendingResponder)? {
        guard phase == .running else { return nil }
        guard let (message1, mac) = HandshakeMac.split(firstFrame) else {
            counters.handshakesFailed += 1
            return nil
        }
        guard let claimed = pairedDevice(madeMac: mac, of: message1) else {
            counters.handshakesRefusedUnknownKey += 1
            logger.debug("refused a handshake no paired device's key made", metadata: ["source": "\(admission.sourceIP)"])
            return nil
        }
        guard handshakeBudget.allow(source: "all", now: clock.monotonicNanoseconds()) else {
            counters.handshakesRefusedBusy += 1
            logger.debug("refused a handshake: the handshake budget is spent", metadata: ["source": "\(admission.sourceIP)"])
            return nil
        }
        let responder: ChannelHandshake.Responder
        do {
            responder = try ChannelHandshake.respond(localStatic: identity.keyPair, message: message1)
        } catch {
            counters.handshakesFailed += 1
            return nil
        }
        let peerID = DeviceID(publicKey: responder.initiatorPublicKey)
        guard peerID == claimed, let runtime = peers[peerID] else {
            counters.handshakesFailed += 1
            return nil
        }
        guard responder.payload.wallNanoseconds > runtime.lastInitiationTimestamp else {
            counters.handshakesRefusedReplay += 1
            return nil
        }
        let (latest, overflow) = clock.wallNanoseconds().addingReportingOverflow(HandshakePayload.maximumLeadNanoseconds)
        guard overflow || responder.payload.wallNanoseconds <= latest else {
            counters.handshakesRefusedFuture += 1
            if let suppressed = futureHandshakeWarning.admit(now: clock.monotonicNanoseconds()) {
                logger.warning("refused a handshake stamped more than an hour ahead of this device's clock; check both clocks",
                               metadata: ["peer.id": "\(peerID.short)", "suppressed": "\(suppressed)"])
            }
            return nil
        }
        if let existingIsLocal = existingAttemptInitiator(runtime),
           !SimultaneousConnectRule.candidateWins(candidateIsLocal: false, existingIsLocal: existingIsLocal,
                                                   localKey: identity.keyPair.publicKey, peerKey: runtime.record.publicKey) {
            counters.simultaneousConnectsResolved += 1
            logger.debug("kept own connection over the peer's simultaneous one", metadata: ["peer.id": "\(peerID.short)"])
            return nil
        }
        let localIndex = allocateIndex(for: peerID)
        var accepting = responder
        do {
            let payload = HandshakePayload(sessionIndex: localIndex, udpPort: UInt16(boundListenAddress?.port ?? 0),
                                           wallNanoseconds: clock.wallNanoseconds(), isRekey: false)
            let (message2, keys) = try accepting.accept(pairKey: runtime.record.pairKey, payload: payload)
            let channel = ActiveChannel(keys: keys, localIndex: localIndex, remoteIndex: responder.payload.sessionIndex,
                                        locallyInitiated: false, now: clock.monotonicNanoseconds(), tuning: tuning)
            let pending = PendingResponder(peer: peerID, channel: channel, udpPort: responder.payload.udpPort,
                                           connectionID: admission.id,
                                           initiatorTimestamp: responder.payload.wallNanoseconds)
            engage(admission.id, channel: admission.channel, deadline: tuning.handshakeTimeout)
            return (try WireFrame.encode(message2), pending)
        } catch {
            indexTable.removeValue(forKey: localIndex)
            counters.handshakesFailed += 1
            return nil
        }
    }

    /// The paired device whose key made `mac` over `message1`; nil when none did. Costs one
    /// HMAC per paired device (their MAC keys are derived once and kept).
    func pairedDevice(madeMac mac: [UInt8], of message1: [UInt8]) -> DeviceID? {
        for id in peers.keys {
            guard let key = handshakeMacKey(of: id) else { continue }
            if HandshakeMac.verify(mac, of: message1, key: key) { return id }
        }
        return nil
    }

    /// The `HandshakeMac` key for message 1s from `peer` to this device (derived on first use
    /// and kept with the pair key it came from, so a new pairing gets a new one).
    func handshakeMacKey(of peer: DeviceID) -> SecretBytes? {
        guard let runtime = peers[peer] else { return nil }
        if let cached = runtime.handshakeMacKey, cached.pairKey == runtime.record.pairKey { return cached.key }
        let key = HandshakeMac.key(pairKey: runtime.record.pairKey, responderPublicKey: identity.keyPair.publicKey)
        peers[peer]?.handshakeMacKey = (runtime.record.pairKey, key)
        return key
    }

    /// Who initiated the live channel or in-flight attempt with this peer (nil: none).
    func existingAttemptInitiator(_ runtime: PeerRuntime) -> Bool? {
        if let connection = runtime.connection, runtime.channel != nil { return connection.locallyInitiated }
        if runtime.outgoingHandshakeInFlight { return true }
        return nil
    }

    /// Opens the initiator's first stream frame; a valid `confirm` activates the channel.
    func completeResponder(_ pending: PendingResponder, confirmFrame: [UInt8], admission: InboundAdmission) -> Bool {
        var pending = pending
        guard phase == .running, let runtime = peers[pending.peer] else { return false }
        guard (try? pending.channel.openStreamFrame(confirmFrame)) == [.confirm] else {
            counters.handshakesFailed += 1
            return false
        }
        // Confirmed: only now is the timestamp the peer's (a replayed message 1 never gets
        // here), and a later handshake must be newer. A replay of the same message 1 that was
        // answered meanwhile is refused here too.
        guard pending.initiatorTimestamp > runtime.lastInitiationTimestamp else {
            counters.handshakesRefusedReplay += 1
            return false
        }
        peers[pending.peer]?.lastInitiationTimestamp = pending.initiatorTimestamp
        if let existingIsLocal = existingAttemptInitiator(runtime),
           !SimultaneousConnectRule.candidateWins(candidateIsLocal: false, existingIsLocal: existingIsLocal,
                                                   localKey: identity.keyPair.publicKey, peerKey: runtime.record.publicKey) {
            counters.simultaneousConnectsResolved += 1
            return false
        }
        markAuthenticated(admission.id)
        var endpoint: SocketAddress?
        if let ip = admission.channel.remoteAddress?.ipAddress, pending.udpPort != 0 {
            endpoint = try? SocketAddress(ipAddress: ip, port: Int(pending.udpPort))
            if let endpoint { learnObservedAddress(endpoint, for: pending.peer) }
        }
        activate(pending.peer, channel: pending.channel,
                 connection: ChannelConnection(id: admission.id, channel: admission.channel, locallyInitiated: false),
                 datagramEndpoint: endpoint)
        return true
    }

    /// A responder whose initiator never confirmed: free its index.
    func handshakeAbandoned(_ pending: PendingResponder) {
        if indexTable[pending.channel.current.localIndex] == pending.peer,
           peers[pending.peer]?.channel?.localIndices.contains(pending.channel.current.localIndex) != true {
            indexTable.removeValue(forKey: pending.channel.current.localIndex)
        }
    }

    /// Records `endpoint` (IP of the connection, announced port) as an observed address.
    func learnObservedAddress(_ endpoint: SocketAddress, for peer: DeviceID) {
        guard let ip = endpoint.ipAddress, let port = endpoint.port else { return }
        let text = DaemonConfiguration.Endpoint(host: ip, port: port).description
        guard peers[peer]?.record.learn(address: text, source: .observed) == true else { return }
        persistPeers()
    }
}
