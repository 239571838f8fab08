import MeshCrypto

/// One `Noise_IKpsk2_25519_ChaChaPoly_SHA256` handshake between two paired daemons, with the
/// `HandshakePayload` each side sends inside it.
///
/// ```
/// initiator                                     responder
///   msg1 = e, es, s, ss  {payload: index, port, time}  ─►   learns the initiator's static key,
///                                                          looks it up among paired devices,
///                                                          sets that pair's psk
///   ◄─  msg2 = e, ee, se, psk {payload: index, port, time}
///   both sides now hold ChannelKeys; the initiator proves it with a sealed `confirm`
/// ```
/// Used for the first handshake of a channel (over a fresh TCP connection) and for every rekey
/// (carried inside the channel as `rekeyInitiation` / `rekeyResponse`). Pure: no I/O, no clock.
struct ChannelHandshake: Sendable {
    /// The Noise protocol name.
    static let protocolName = "Noise_IKpsk2_25519_ChaChaPoly_SHA256"
    /// Binds the handshake to this protocol and version.
    static let prologue = Array("SessionMesh channel v1".utf8)

    private var noise: NoiseHandshake

    /// Starts an initiator towards `peerPublicKey`; returns it and message 1.
    /// Its ephemeral comes from `random`.
    static func initiate(localStatic: X25519KeyPair, peerPublicKey: [UInt8], pairKey: SecretBytes,
                         payload: HandshakePayload, random: any RandomSource = SodiumRandomSource()) throws -> (ChannelHandshake, [UInt8]) {
        var noise = try NoiseHandshake(protocolName: protocolName, initiator: true, prologue: prologue,
                                       localStatic: localStatic, remoteStatic: peerPublicKey,
                                       preSharedKeys: [pairKey], random: random)
        let message = try noise.writeMessage(payload: payload.encode())
        return (ChannelHandshake(noise: noise), message)
    }

    /// Reads message 2 on the initiator; returns the responder's payload and the keys.
    mutating func readResponse(_ message: [UInt8]) throws -> (HandshakePayload, ChannelKeys) {
        let payload = try HandshakePayload(decoding: try noise.readMessage(message))
        guard noise.isComplete else { throw WireFormatError(what: "handshake (incomplete after message 2)") }
        return (payload, try noise.channelKeys())
    }

    /// A responder that has read message 1 and knows who claims to be calling.
    struct Responder: Sendable {
        fileprivate var noise: NoiseHandshake
        /// The initiator's static public key (authenticated only once message 2 is answered
        /// and the initiator's first sealed message opens).
        let initiatorPublicKey: [UInt8]
        /// What the initiator sent.
        let payload: HandshakePayload

        /// Sets the pair's psk, writes message 2 and returns it with the keys.
        mutating func accept(pairKey: SecretBytes, payload: HandshakePayload) throws -> ([UInt8], ChannelKeys) {
            noise.setPreSharedKeys([pairKey])
            let message = try noise.writeMessage(payload: payload.encode())
            guard noise.isComplete else { throw WireFormatError(what: "handshake (incomplete after message 2)") }
            return (message, try noise.channelKeys())
        }
    }

    /// Reads message 1 as the responder. Throws on anything that is not a valid message 1 for
    /// this device's static key. Its ephemeral (in message 2) comes from `random`.
    static func respond(localStatic: X25519KeyPair, message: [UInt8],
                        random: any RandomSource = SodiumRandomSource()) throws -> Responder {
        var noise = try NoiseHandshake(protocolName: protocolName, initiator: false, prologue: prologue,
                                       localStatic: localStatic, random: random)
        let payload = try HandshakePayload(decoding: try noise.readMessage(message))
        guard let key = noise.remoteStaticPublicKey else { throw WireFormatError(what: "handshake (no static key)") }
        return Responder(noise: noise, initiatorPublicKey: key, payload: payload)
    }
}
