import MeshCrypto
import NIOCore

/// The keys and key rotation of one channel to one peer: both paths, both directions.
///
/// A value type the node keeps per peer; every method is pure (time passed in) and returns the
/// bytes to write, so two of them can be driven against each other in a test without sockets.
///
/// Rekey (a fresh `Noise_IKpsk2` handshake carried inside the channel, so every rekey gets new
/// ephemeral keys):
/// ```
/// I (rekey initiator)                                   R
///   rekeyInitiation(msg1)  [old stream keys]        ─►  reads msg1, answers; from here R's
///                                                        stream sender uses the new keys and
///                                                        R accepts datagrams on its new index
///   ◄─ rekeyResponse(msg2) [old stream keys]
///   I switches its stream opener, then sends
///   rekeyConfirm [old stream keys], then switches its stream sender and datagram sender
///                                                   ─►  R switches its stream opener and its
///                                                        datagram sender
/// ```
/// TCP's ordering makes each switch land exactly between two frames. The previous datagram
/// keys stay valid for reordered packets until they are `rejectAfter` old.
struct ActiveChannel: Sendable {
    /// Whether this side initiated the TCP connection (and first handshake) of the channel.
    let locallyInitiated: Bool
    private var streamSender: StreamSealer
    private var streamReceiver: StreamOpener
    private(set) var current: DatagramEpoch
    private var previous: DatagramEpoch?
    private(set) var rekeyTimer: RekeyTimer
    private var initiatedRekey: (handshake: ChannelHandshake, localIndex: UInt32)?
    private var answeredRekey: (streamReceiver: StreamOpener, epoch: DatagramEpoch)?
    /// Completed rekeys.
    private(set) var rekeys: UInt64 = 0
    /// The session indices of the channel's first handshake, this side's and the peer's: what
    /// names the channel (both ends hold the same pair, mirrored; a rekey does not change it).
    let identity: (local: UInt32, remote: UInt32)

    /// A channel from a completed first handshake.
    /// The peer's handshake said it reads the device set's channel messages (flags bit 1).
    var peerSpeaksDeviceSet = false

    init(keys: ChannelKeys, localIndex: UInt32, remoteIndex: UInt32, locallyInitiated: Bool,
         now: UInt64, tuning: ChannelTuning) {
        self.locallyInitiated = locallyInitiated
        identity = (localIndex, remoteIndex)
        streamSender = keys.streamSender
        streamReceiver = keys.streamReceiver
        current = DatagramEpoch(localIndex: localIndex, remoteIndex: remoteIndex, sealer: keys.datagramSender,
                                opener: keys.datagramReceiver, createdAt: now)
        rekeyTimer = RekeyTimer(rekeyAfterSeconds: tuning.rekeyAfter, rejectAfterSeconds: tuning.rejectAfter,
                                rekeyTimeoutSeconds: tuning.handshakeTimeout, keysCreatedAt: now,
                                locallyInitiated: locallyInitiated)
    }

    /// Every index datagrams to us may carry now.
    var localIndices: [UInt32] {
        [current.localIndex] + [previous?.localIndex, answeredRekey?.epoch.localIndex, initiatedRekey?.localIndex]
            .compactMap { $0 }
    }

    // MARK: Paths

    /// Header + sealed datagram for `message`; flags a rekey when the counter nears its limit.
    mutating func sealDatagram(_ message: ChannelMessage) throws -> [UInt8] {
        let sealed = try current.seal(message)
        if current.sealer.needsRekey { rekeyTimer.counterLimitReached() }
        return sealed
    }

    /// As `sealDatagram(_:)`, writing header + sealed datagram at the end of `buffer`.
    mutating func sealDatagram(_ message: ChannelMessage, into buffer: inout ByteBuffer) throws {
        try current.seal(message, into: &buffer)
        if current.sealer.needsRekey { rekeyTimer.counterLimitReached() }
    }

    /// Opens a datagram whose header named `index`; throws on anything that does not
    /// authenticate or is a replay. `datagram` is read where it was received.
    mutating func openDatagram(_ datagram: UnsafeRawBufferPointer, index: UInt32) throws -> ChannelMessage {
        if index == current.localIndex { return try current.open(datagram) }
        if var pending = answeredRekey, index == pending.epoch.localIndex {
            defer { answeredRekey = pending }
            return try pending.epoch.open(datagram)
        }
        if var old = previous, index == old.localIndex {
            defer { previous = old }
            return try old.open(datagram)
        }
        throw WireFormatError(what: "datagram for a retired session index")
    }

    /// Bytes to write on the stream for `message` (one or more sealed frames).
    mutating func sealStream(_ message: ChannelMessage) throws -> [UInt8] {
        try streamSender.seal(message.encode())
    }

    /// Opens one received frame body (length prefix removed); returns the messages it
    /// completes (zero or one). Throws on a forged or corrupt frame: close the connection.
    mutating func openStreamFrame(_ body: [UInt8]) throws -> [ChannelMessage] {
        var framed = WireWriter(capacity: body.count + 2)
        framed.u16(UInt16(truncatingIfNeeded: body.count))
        framed.raw(body)
        return try streamReceiver.feed(framed.bytes).map { try ChannelMessage(decoding: $0) }
    }

    // MARK: Rekey

    /// Starts a rekey as initiator; returns the stream bytes to write.
    mutating func startRekey(localStatic: X25519KeyPair, peerPublicKey: [UInt8], pairKey: SecretBytes,
                             newLocalIndex: UInt32, payload: HandshakePayload,
                             ephemeral: X25519KeyPair = .generate()) throws -> [UInt8] {
        let (handshake, message) = try ChannelHandshake.initiate(localStatic: localStatic, peerPublicKey: peerPublicKey,
                                                                 pairKey: pairKey, payload: payload, ephemeral: ephemeral)
        initiatedRekey = (handshake, newLocalIndex)
        return try sealStream(.rekeyInitiation(message))
    }

    /// Answers the peer's rekey; returns the stream bytes to write, or nil when this side's own
    /// rekey wins a collision (the side with the smaller public key wins, as for connects).
    mutating func answerRekey(_ message: [UInt8], localStatic: X25519KeyPair, peerPublicKey: [UInt8],
                              pairKey: SecretBytes, newLocalIndex: UInt32, payload: HandshakePayload,
                              now: UInt64, ephemeral: @autoclosure () -> X25519KeyPair = .generate()) throws -> [UInt8]? {
        if initiatedRekey != nil {
            if SimultaneousConnectRule.localSideIsPreferred(localKey: localStatic.publicKey, peerKey: peerPublicKey) {
                return nil
            }
            initiatedRekey = nil
        }
        var responder = try ChannelHandshake.respond(localStatic: localStatic, message: message)
        guard responder.initiatorPublicKey == peerPublicKey else {
            throw WireFormatError(what: "rekey from a different static key")
        }
        let (reply, keys) = try responder.accept(pairKey: pairKey, payload: payload, ephemeral: ephemeral())
        let bytes = try sealStream(.rekeyResponse(reply))
        streamSender = keys.streamSender
        answeredRekey = (keys.streamReceiver,
                         DatagramEpoch(localIndex: newLocalIndex, remoteIndex: responder.payload.sessionIndex,
                                       sealer: keys.datagramSender, opener: keys.datagramReceiver, createdAt: now))
        return bytes
    }

    /// Completes this side's rekey with the peer's answer; returns the stream bytes to write.
    mutating func completeRekey(_ message: [UInt8], now: UInt64) throws -> [UInt8] {
        guard var pending = initiatedRekey else { throw WireFormatError(what: "rekey response without a rekey") }
        initiatedRekey = nil
        let (payload, keys) = try pending.handshake.readResponse(message)
        streamReceiver = keys.streamReceiver
        let bytes = try sealStream(.rekeyConfirm)
        streamSender = keys.streamSender
        install(DatagramEpoch(localIndex: pending.localIndex, remoteIndex: payload.sessionIndex,
                              sealer: keys.datagramSender, opener: keys.datagramReceiver, createdAt: now),
                now: now, locallyInitiated: true)
        return bytes
    }

    /// The rekey initiator switched to the new keys: so does this side.
    mutating func confirmRekey(now: UInt64) throws {
        guard let pending = answeredRekey else { throw WireFormatError(what: "rekey confirm without a rekey") }
        answeredRekey = nil
        streamReceiver = pending.streamReceiver
        install(pending.epoch, now: now, locallyInitiated: false)
    }

    private mutating func install(_ epoch: DatagramEpoch, now: UInt64, locallyInitiated: Bool) {
        previous = current
        current = epoch
        rekeyTimer.keysReplaced(now: now, locallyInitiated: locallyInitiated)
        rekeys &+= 1
    }

    /// Timer tick: drops previous keys past `rejectAfter` and says whether to rekey or close.
    mutating func tick(now: UInt64) -> RekeyTimer.Action {
        if let old = previous, now > old.createdAt, now - old.createdAt >= rekeyTimer.rejectAfter { previous = nil }
        return rekeyTimer.tick(now: now)
    }
}
