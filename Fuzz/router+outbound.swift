import Foundation
import NIOCore
import NIOEmbedded
@testable import MeshCrypto
@testable import MeshDaemon

// The `router` harness's non-reading peer (steps 8–10, see router.swift): a channel connection
// installed the way a completed handshake installs one (`MeshNode.activate`), whose writes the
// peer never reads unless a step says so, and bursts of genuine stream frames from the peer
// (pings, keepalive requests, rekey initiations) sealed with the peer's end of the channel keys
// and opened by the node's stream reader (`handleStreamFrame`).
//
// Properties (docs/CHANNELS.md, "Outbound budget"; a violation is a finding):
//   - no write reaches the connection while it holds more than the budget admits: a reply
//     only at or below the reply limit, anything at all only below the hard limit, so the
//     bytes queued towards the peer never exceed the hard limit by more than one message;
//   - the node's budget charges exactly what the connection holds (bytes plus
//     `OutboundBudget.perWriteCharge` per write not completed);
//   - during a burst of pings and keepalive requests, every request is answered or its reply
//     dropped and counted (`stream.replies_dropped`);
//   - after a timer pass, no connection that stayed over its reply limit for longer than the
//     stall time is still the peer's channel connection.

/// The peer's end of one channel connection that does not read: an `EmbeddedChannel` whose
/// first outbound handler (`FuzzHeldWrites`) keeps every write until the harness lets the peer
/// read, and the peer's channel keys (to seal what it sends). Lives on the node's loop.
final class FuzzUndrainedPeer: @unchecked Sendable {
    /// The node's connection number for it.
    let id: UInt64
    let channel: EmbeddedChannel
    let writes: FuzzHeldWrites
    /// The peer's side of the channel: seals the frames it sends.
    var sender: ActiveChannel

    /// Both ends' keys from fixed split keys (a run is a function of its input); `fill` varies
    /// them per connection.
    static func keys(fill: UInt8, initiator: Bool) -> ChannelKeys {
        ChannelKeys(initiatorToResponder: SecretBytes([UInt8](repeating: fill, count: 32)),
                    responderToInitiator: SecretBytes([UInt8](repeating: fill &+ 1, count: 32)), isInitiator: initiator)
    }

    init(id: UInt64, writes: FuzzHeldWrites, now: UInt64, tuning: ChannelTuning) {
        self.id = id
        self.writes = writes
        channel = EmbeddedChannel(handler: writes)
        sender = ActiveChannel(keys: Self.keys(fill: UInt8(truncatingIfNeeded: id), initiator: false),
                               localIndex: 0x7000_0000 | UInt32(truncatingIfNeeded: id), remoteIndex: UInt32(truncatingIfNeeded: id),
                               locallyInitiated: false, now: now, tuning: tuning)
    }

    /// Runs what the embedded loop was given (the pipeline's teardown after a close).
    func settle() { channel.embeddedEventLoop.run() }

    /// The input ends: the connection closes (failing what it still holds) and is torn down.
    func finish() {
        if !writes.closed { channel.close(promise: nil) }
        settle()
    }
}

/// Keeps every write of a channel connection (bytes and promise), as NIO keeps writes towards a
/// socket whose send buffer is full, until `read(_:)` lets the peer take some; checks each write
/// against the admission ceiling and tracks the charge and how long it has been over the reply
/// limit, independently of the node's own accounting.
final class FuzzHeldWrites: ChannelOutboundHandler, @unchecked Sendable {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let clock: FuzzClock
    let replyLimit: Int
    let limit: Int
    private var held: [(buffer: ByteBuffer, promise: EventLoopPromise<Void>?)] = []
    private var head = 0
    private(set) var heldBytes = 0
    /// Writes this connection received.
    private(set) var writes = 0
    /// Monotonic instant the charge went above the reply limit; nil while at or below.
    private(set) var overSince: UInt64?
    /// The highest charge a write may find the connection at: the hard limit, or the reply
    /// limit while only replies can be written (a burst of requests).
    var ceiling: Int
    private(set) var closed = false

    init(clock: FuzzClock, replyLimit: Int, limit: Int) {
        self.clock = clock
        self.replyLimit = replyLimit
        self.limit = limit
        ceiling = limit - 1
    }

    /// Bytes plus the per-write charge of the writes held now.
    var charge: Int { heldBytes + (held.count - head) * OutboundBudget.perWriteCharge }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let buffer = unwrapOutboundIn(data)
        if charge > ceiling {
            fuzzFailure("a \(buffer.readableBytes)-byte write reached a connection holding \(charge) bytes (ceiling \(ceiling))")
        }
        if closed {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        writes += 1
        held.append((buffer, promise))
        heldBytes += buffer.readableBytes
        noteCharge()
    }

    func flush(context: ChannelHandlerContext) {}

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if !closed {
            closed = true
            fail()
        }
        context.close(mode: mode, promise: promise)
    }

    /// The peer reads `count` writes (oldest first): they complete.
    func read(_ count: Int) {
        var left = count
        while left > 0, head < held.count {
            let (buffer, promise) = held[head]
            held[head].promise = nil
            head += 1
            left -= 1
            heldBytes -= buffer.readableBytes
            noteCharge()
            promise?.succeed(())
        }
        compact()
    }

    /// Every write held fails (the connection closed).
    private func fail() {
        while head < held.count {
            let (buffer, promise) = held[head]
            held[head].promise = nil
            head += 1
            heldBytes -= buffer.readableBytes
            noteCharge()
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
        compact()
    }

    private func compact() {
        guard head > 0, head * 2 >= held.count else { return }
        held.removeFirst(head)
        head = 0
    }

    private func noteCharge() {
        if charge > replyLimit {
            if overSince == nil { overSince = clock.monotonicNanoseconds() }
        } else {
            overSince = nil
        }
    }
}

extension MeshNode {
    /// Installs `undrained` as `peer`'s channel connection, as `activate` does once a handshake
    /// completed (this side initiated it).
    func fuzzActivate(_ peer: DeviceID, _ undrained: FuzzUndrainedPeer) {
        let now = clock.monotonicNanoseconds()
        let channel = ActiveChannel(keys: FuzzUndrainedPeer.keys(fill: UInt8(truncatingIfNeeded: undrained.id), initiator: true),
                                    localIndex: UInt32(truncatingIfNeeded: undrained.id), remoteIndex: 0x7000_0000 | UInt32(truncatingIfNeeded: undrained.id),
                                    locallyInitiated: true, now: now, tuning: tuning)
        activate(peer, channel: channel, connection: ChannelConnection(id: undrained.id, path: TCPStreamPath(undrained.channel), locallyInitiated: true),
                 datagramEndpoint: nil)
    }

    /// A new connection that does not read, on this loop (its embedded loop must be used on
    /// the thread that made it).
    func fuzzUndrainedPeer(id: UInt64, clock: FuzzClock) -> FuzzUndrainedPeer {
        let writes = FuzzHeldWrites(clock: clock, replyLimit: outbound.replyLimit, limit: outbound.limit)
        return FuzzUndrainedPeer(id: id, writes: writes, now: self.clock.monotonicNanoseconds(), tuning: tuning)
    }

    /// `peer` sends `count` requests on `undrained` (sealed with its keys, opened by the stream
    /// reader): pings and keepalive requests as the bits of `mix` say, and, when `rekeyEvery` is
    /// not 0, a genuine rekey initiation every `rekeyEvery`th message. Returns how many requests
    /// were handled while the connection stayed current, and how many of their replies were
    /// written and dropped.
    func fuzzRequestBurst(_ undrained: FuzzUndrainedPeer, from peer: DeviceID, count: Int, mix: UInt8,
                          rekeyEvery: Int, peerKey: X25519KeyPair) -> (requests: Int, written: Int, dropped: UInt64) {
        let writesBefore = undrained.writes.writes, droppedBefore = counters.streamRepliesDropped
        let record = channels.peers[peer]?.record
        var requests = 0
        undrained.writes.ceiling = rekeyEvery == 0 ? outbound.replyLimit : outbound.limit - 1
        defer { undrained.writes.ceiling = outbound.limit - 1 }
        for index in 0..<count {
            guard channels.peers[peer]?.connection?.id == undrained.id else { break }
            let message: ChannelMessage
            if rekeyEvery > 0, index % rekeyEvery == rekeyEvery - 1, let record {
                let payload = HandshakePayload(sessionIndex: UInt32(truncatingIfNeeded: index) | 0x4000_0000, udpPort: 1,
                                               wallNanoseconds: clock.wallNanoseconds(), isRekey: true)
                guard let bytes = try? undrained.sender.startRekey(localStatic: peerKey, peerPublicKey: channels.localKeys.publicKey,
                                                                   pairKey: record.pairKey, newLocalIndex: UInt32(index),
                                                                   payload: payload) else { fuzzFailure("the peer's rekey") }
                guard handleStreamFrame(Array(bytes.dropFirst(2)), from: peer, connectionID: undrained.id) else { break }
                continue
            } else if (mix >> (index % 8)) & 1 == 0 {
                message = .pingRequest(id: UInt32(truncatingIfNeeded: index) | UInt32(mix) << 24)
            } else {
                message = .keepaliveRequest(t1: clock.wallNanoseconds() &- Int64(index))
            }
            guard let bytes = try? undrained.sender.sealStream(message) else { fuzzFailure("the peer's seal") }
            requests += 1
            guard handleStreamFrame(Array(bytes.dropFirst(2)), from: peer, connectionID: undrained.id) else { break }
        }
        return (requests, undrained.writes.writes - writesBefore, counters.streamRepliesDropped - droppedBefore)
    }

    /// The peer reads `count` writes of `undrained` (on this loop, where its embedded loop lives).
    func fuzzRead(_ undrained: FuzzUndrainedPeer, writes count: Int) { undrained.writes.read(count) }

    /// Runs what the connections' embedded loops were given (teardown after a close).
    func fuzzSettle(_ connections: [FuzzUndrainedPeer]) { for connection in connections { connection.settle() } }

    /// The input ends: `peer`'s channel goes down and every connection closes and is torn down.
    func fuzzFinish(_ connections: [FuzzUndrainedPeer], of peer: DeviceID) {
        dropChannel(peer, reason: "the input ended", redial: false)
        for connection in connections { connection.finish() }
    }

    /// The node's timer pass (`ChannelMaintenance.tick`) for a node that is not running:
    /// keepalives, leases, rekeys, connections stalled over their reply limit.
    func fuzzTimerPass() {
        let now = clock.monotonicNanoseconds()
        let keepalive = Nanoseconds.from(seconds: max(configuration.keepaliveInterval, 0.01))
        for peer in Array(channels.peers.keys) {
            guard let actions = channels.peers[peer]?.timerTick(now: now, keepaliveInterval: keepalive) else { continue }
            for action in actions { maintenance.perform(self, action, for: peer) }
        }
        maintenance.closeStalledConnections(self, now: now)
        _ = outbound.takeRelease()
    }

    /// Checks the outbound properties for `undrained` (see the top of this file).
    func fuzzCheckOutbound(_ undrained: FuzzUndrainedPeer, of peer: DeviceID, afterTimerPass: Bool) {
        let current = channels.peers[peer]?.connection?.id == undrained.id
        let writes = undrained.writes
        if writes.charge >= outbound.limit + Self.largestStreamWrite + OutboundBudget.perWriteCharge {
            fuzzFailure("\(writes.charge) bytes queued towards the peer, limit \(outbound.limit)")
        }
        if let budget = outbound.budget(of: undrained.id) {
            if budget.charge != writes.charge {
                fuzzFailure("the budget charges \(budget.charge) bytes, the connection holds \(writes.charge)")
            }
        } else if current {
            fuzzFailure("the peer's current connection has no outbound budget")
        }
        if afterTimerPass, current, let overSince = writes.overSince,
           clock.monotonicNanoseconds() &- overSince > outbound.stallNanoseconds {
            fuzzFailure("a connection over its reply limit for \(clock.monotonicNanoseconds() &- overSince) ns is still open")
        }
    }

    /// The largest stream write (a whole frame of the largest stream message, sealed).
    static let largestStreamWrite = 1 << 20
}
