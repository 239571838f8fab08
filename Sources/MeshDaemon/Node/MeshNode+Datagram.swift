import MeshCrypto
import NIOCore

extension MeshNode {
    /// One received datagram: header lookup, authentication, then dispatch. Anything that does
    /// not authenticate is counted and dropped: no reply, nothing allocated. `bytes` are the
    /// datagram where NIO received it (valid for the call only).
    func handleDatagram(_ bytes: UnsafeRawBufferPointer, from source: SocketAddress) {
        guard !ignoresDatagrams else { return }
        let receivedAt = clock.wallNanoseconds()
        guard let header = DatagramHeader(parsing: bytes), let peer = indexTable[header.receiverIndex],
              let slot = peers.index(forKey: peer) else {
            counters.datagramsRejected += 1
            return
        }
        // Opened in place through `peers.values` (no copy of the peer's runtime or channel, and
        // no move in and out of an Optional as `peers[peer]?.…` makes); `slot` stays valid until
        // `peers` gains or loses a key, which nothing below does before its last use.
        let message: ChannelMessage
        do {
            guard let opened = try peers.values[slot].openDatagram(bytes, index: header.receiverIndex) else {
                counters.datagramsRejected += 1
                return
            }
            message = opened
        } catch {
            counters.datagramsRejected += 1
            return
        }
        let now = clock.monotonicNanoseconds()
        counters.datagramsReceived += 1
        peers.values[slot].datagramReceived(now: now, from: source)
        switch message {
        case .keepaliveRequest(let t1):
            sendDatagram(.keepaliveReply(t1: t1, t2: receivedAt, t3: clock.wallNanoseconds()), to: peer)
        case .keepaliveReply(let t1, let t2, let t3):
            if peers.values[slot].estimator.addSample(t1: t1, t2: t2, t3: t3, t4: receivedAt, now: now) != nil {
                counters.keepaliveRepliesRefused += 1
            }
        case .pingRequest(let id):
            sendDatagram(.pingReply(id: id), to: peer)
        case .pingReply(let id):
            finishPing(id, at: now, from: peer)
        case .application(let payload):
            deliver(payload, from: peer, path: .datagram)
        case .unpaired, .rekeyInitiation, .rekeyResponse, .rekeyConfirm, .confirm:
            break   // stream-only messages are ignored on the datagram path
        }
    }
}
