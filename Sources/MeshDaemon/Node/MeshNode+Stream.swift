import MeshCrypto
import MeshCore
import NIOCore

extension MeshNode {
    /// Reads stream frames of an active channel until its stream path ends.
    nonisolated func pumpStream(peer: DeviceID, connectionID: UInt64, frames: inout PathFrames) async throws {
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
        let receivedAt = clock.wallNanoseconds()
        switch channels.openStreamFrame(body, from: peer, connectionID: connectionID, now: clock.monotonicNanoseconds()) {
        case .notCurrent:
            return false
        case .rejected:
            counters.streamFramesRejected += 1
            logger.warning("closing a channel after a stream frame failed to open", metadata: ["peer.id": "\(peer.short)"])
            dropChannel(peer, reason: "bad stream frame", redial: true)
            return false
        case .opened(let messages):
            for message in messages {
                counters.streamMessagesReceived += 1
                let now = clock.monotonicNanoseconds()
                let action = channels.streamMessage(message, from: peer, receivedAt: receivedAt, now: now)
                guard perform(action, from: peer, path: .stream, now: now) else { return false }
            }
            return true
        }
    }

    /// Carries out what an authenticated message from `peer` on `path` asks for at monotonic
    /// `now`; false when the channel is gone afterwards.
    func perform(_ action: ChannelMessageAction, from peer: DeviceID, path: PingPath, now: UInt64) -> Bool {
        switch action {
        case .none:
            break
        case .deliver(let bytes):
            handOff.deliver(self, bytes, from: peer, path: path)
        case .answerPing(let id):
            reply(.pingReply(id: id), to: peer, on: path)
        case .pingAnswered(let id):
            prober.finish(id, at: now, from: peer)
        case .answerKeepalive(let t1, let t2):
            reply(.keepaliveReply(t1: t1, t2: t2, t3: clock.wallNanoseconds()), to: peer, on: path)
        case .keepaliveRefused:
            counters.keepaliveRepliesRefused += 1
        case .unpaired:
            logger.info("peer removed the pair", metadata: ["peer.id": "\(peer.short)"])
            removePeer(peer, reason: "the peer unpaired this device")
            return false
        case .rekeyInitiation(let message1):
            return maintenance.answerRekey(self, message1, from: peer)
        case .rekeyResponse(let message2):
            return maintenance.completeRekey(self, message2, from: peer)
        case .rekeyConfirm:
            return maintenance.confirmRekey(self, from: peer)
        case .deviceSet(let message):
            return deviceSet.received(self, message, from: peer)
        }
        return true
    }

    /// Sends `message` to `peer` on the path a request came on; on the stream, as a reply the
    /// outbound budget drops while the peer does not drain.
    private func reply(_ message: ChannelMessage, to peer: DeviceID, on path: PingPath) {
        switch path {
        case .datagram: sendDatagram(message, to: peer)
        case .stream: sendStream(message, to: peer, traffic: .reply)
        }
    }
}
