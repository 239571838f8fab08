import MeshCrypto
import MeshCore
import NIOCore

/// What one authenticated channel message asks of the node.
enum ChannelMessageAction: Equatable, Sendable {
    /// Nothing (a keepalive reply taken as a sample, a message the path does not carry).
    case none
    /// Hand the application message to the inbound handler.
    case deliver([UInt8])
    /// Answer the ping on the path it came on.
    case answerPing(UInt32)
    /// A ping of this device was answered.
    case pingAnswered(UInt32)
    /// Answer the keepalive on the path it came on with `t1`, `t2` (its arrival) and the wall
    /// clock when the answer is sent.
    case answerKeepalive(t1: Int64, t2: Int64)
    /// A keepalive reply the clock estimator refused (`keepaliveRepliesRefused`).
    case keepaliveRefused
    /// The peer unpaired this device: forget it.
    case unpaired
    /// The peer started a rekey (stream only).
    case rekeyInitiation([UInt8])
    /// The peer answered this side's rekey (stream only).
    case rekeyResponse([UInt8])
    /// The peer confirmed the rekey this side answered (stream only).
    case rekeyConfirm
    /// A device set message (stream only).
    case deviceSet(DeviceSetMessage)
}

/// The receive side: a stream frame or a datagram is opened with the peer's channel keys and
/// each message it carries becomes a `ChannelMessageAction`.
extension PeerChannels {
    /// What `openStreamFrame` found.
    enum StreamFrame: Sendable {
        /// The connection no longer carries the peer's active channel: stop reading it.
        case notCurrent
        /// The frame did not open: close the channel.
        case rejected
        /// The messages the frame carried, in order (the lease was renewed).
        case opened([ChannelMessage])
    }

    /// Opens one stream frame that arrived from `peer` on connection `connectionID` at
    /// monotonic `now`.
    mutating func openStreamFrame(_ body: [UInt8], from peer: DeviceID, connectionID: UInt64, now: UInt64) -> StreamFrame {
        guard var runtime = peers[peer], runtime.connection?.id == connectionID, var channel = runtime.channel else {
            return .notCurrent
        }
        let messages: [ChannelMessage]
        do {
            messages = try channel.openStreamFrame(body)
        } catch {
            return .rejected
        }
        runtime.channel = channel
        runtime.lease.renew(now: now)
        peers[peer] = runtime
        return .opened(messages)
    }

    /// What a stream message from `peer`, which arrived at wall-clock `receivedAt`, asks for
    /// at monotonic `now` (a keepalive reply is taken as a clock sample here).
    mutating func streamMessage(_ message: ChannelMessage, from peer: DeviceID, receivedAt: Int64, now: UInt64) -> ChannelMessageAction {
        switch message {
        case .pingRequest(let id): return .answerPing(id)
        case .pingReply(let id): return .pingAnswered(id)
        case .application(let bytes): return .deliver(bytes)
        case .unpaired: return .unpaired
        case .rekeyInitiation(let message1): return .rekeyInitiation(message1)
        case .rekeyResponse(let message2): return .rekeyResponse(message2)
        case .rekeyConfirm: return .rekeyConfirm
        case .keepaliveRequest(let t1): return .answerKeepalive(t1: t1, t2: receivedAt)
        case .keepaliveReply(let t1, let t2, let t3):
            let refusal = peers[peer]?.estimator.addSample(t1: t1, t2: t2, t3: t3, t4: receivedAt, now: now)
            return refusal != nil ? .keepaliveRefused : .none
        case .confirm: return .none
        case .deviceSet(let message): return .deviceSet(message)
        }
    }

    /// An authenticated datagram: who sent it, where that peer sits in `peers` (valid until
    /// `peers` gains or loses a key), and its message.
    struct OpenedDatagram {
        let peer: DeviceID
        let slot: Dictionary<DeviceID, PeerRuntime>.Index
        let message: ChannelMessage
    }

    /// Looks up the receiver index of a datagram and opens it in place (no copy of the peer's
    /// runtime or channel); nil when it does not authenticate. `bytes` are valid for the call
    /// only.
    mutating func openDatagram(_ bytes: UnsafeRawBufferPointer) -> OpenedDatagram? {
        guard let header = DatagramHeader(parsing: bytes), let peer = indexTable[header.receiverIndex],
              let slot = peers.index(forKey: peer) else {
            return nil
        }
        do {
            guard let message = try peers.values[slot].openDatagram(bytes, index: header.receiverIndex) else { return nil }
            return OpenedDatagram(peer: peer, slot: slot, message: message)
        } catch {
            return nil
        }
    }

    /// What an opened datagram from `source`, which arrived at wall-clock `receivedAt`, asks
    /// for at monotonic `now`; renews the peer's lease and follows its address. Stream-only
    /// messages are ignored on the datagram path.
    mutating func datagramMessage(_ opened: OpenedDatagram, from source: PathAddress,
                                  receivedAt: Int64, now: UInt64) -> ChannelMessageAction {
        peers.values[opened.slot].datagramReceived(now: now, from: source)
        switch opened.message {
        case .keepaliveRequest(let t1): return .answerKeepalive(t1: t1, t2: receivedAt)
        case .keepaliveReply(let t1, let t2, let t3):
            let refusal = peers.values[opened.slot].estimator.addSample(t1: t1, t2: t2, t3: t3, t4: receivedAt, now: now)
            return refusal != nil ? .keepaliveRefused : .none
        case .pingRequest(let id): return .answerPing(id)
        case .pingReply(let id): return .pingAnswered(id)
        case .application(let payload): return .deliver(payload)
        case .unpaired, .rekeyInitiation, .rekeyResponse, .rekeyConfirm, .confirm, .deviceSet: return .none
        }
    }
}
