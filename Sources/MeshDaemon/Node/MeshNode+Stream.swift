import MeshCrypto
import MeshCore
import NIOCore

extension MeshNode {
    /// Reads stream frames of an active channel until the connection ends.
    nonisolated func pumpStream(peer: DeviceID, connectionID: UInt64,
                                frames: inout NIOAsyncChannelInboundStream<WireFrame>.AsyncIterator) async throws {
        do {
            while case .frame(let body)? = try await frames.next() {
                guard await handleStreamFrame(body, from: peer, connectionID: connectionID) else { break }
                await waitForInboundRoom()
            }
        } catch {
            await connectionClosed(peer: peer, connectionID: connectionID)
            throw error
        }
        await connectionClosed(peer: peer, connectionID: connectionID)
    }

    /// Opens and dispatches one stream frame; false closes the connection.
    func handleStreamFrame(_ body: [UInt8], from peer: DeviceID, connectionID: UInt64) -> Bool {
        guard var runtime = peers[peer], runtime.connection?.id == connectionID, var channel = runtime.channel else {
            return false
        }
        let receivedAt = clock.wallNanoseconds()
        let messages: [ChannelMessage]
        do {
            messages = try channel.openStreamFrame(body)
        } catch {
            counters.streamFramesRejected += 1
            logger.warning("closing a channel after a stream frame failed to open", metadata: ["peer.id": "\(peer.short)"])
            dropChannel(peer, reason: "bad stream frame", redial: true)
            return false
        }
        runtime.channel = channel
        runtime.lease.renew(now: clock.monotonicNanoseconds())
        peers[peer] = runtime
        for message in messages {
            counters.streamMessagesReceived += 1
            guard handleStreamMessage(message, from: peer, receivedAt: receivedAt) else { return false }
        }
        return true
    }

    /// Acts on one stream message; false when the channel is gone afterwards.
    func handleStreamMessage(_ message: ChannelMessage, from peer: DeviceID, receivedAt: Int64) -> Bool {
        switch message {
        case .pingRequest(let id):
            sendStream(.pingReply(id: id), to: peer)
        case .pingReply(let id):
            finishPing(id, at: clock.monotonicNanoseconds(), from: peer)
        case .application(let bytes):
            deliver(bytes, from: peer, path: .stream)
        case .unpaired:
            logger.info("peer removed the pair", metadata: ["peer.id": "\(peer.short)"])
            removePeer(peer, reason: "the peer unpaired this device")
            return false
        case .rekeyInitiation(let message1):
            return answerRekey(message1, from: peer)
        case .rekeyResponse(let message2):
            return completeRekey(message2, from: peer)
        case .rekeyConfirm:
            return withChannel(peer) { channel, now in try channel.confirmRekey(now: now) }
        case .keepaliveRequest(let t1):
            sendStream(.keepaliveReply(t1: t1, t2: receivedAt, t3: clock.wallNanoseconds()), to: peer)
        case .keepaliveReply(let t1, let t2, let t3):
            let refusal = peers[peer]?.estimator.addSample(t1: t1, t2: t2, t3: t3, t4: receivedAt,
                                                           now: clock.monotonicNanoseconds())
            if refusal != nil { counters.keepaliveRepliesRefused += 1 }
        case .confirm:
            break
        }
        return true
    }

    /// Runs `body` on the peer's channel and stores it back; a throw drops the channel.
    func withChannel(_ peer: DeviceID, _ body: (inout ActiveChannel, UInt64) throws -> Void) -> Bool {
        guard var runtime = peers[peer], var channel = runtime.channel else { return false }
        do {
            try body(&channel, clock.monotonicNanoseconds())
        } catch {
            dropChannel(peer, reason: "rekey failed", redial: true)
            return false
        }
        let before = runtime.channel?.rekeys ?? 0
        runtime.channel = channel
        peers[peer] = runtime
        if channel.rekeys != before {
            counters.rekeysCompleted += 1
            runtime.lastHandshakeWall = clock.wallSeconds()
            peers[peer] = runtime
        }
        syncIndices(of: peer)
        return true
    }
}
