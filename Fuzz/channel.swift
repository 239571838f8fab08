@testable import MeshDaemon

// libFuzzer harness `channel`: the plaintext of every sealed channel message, and the handshake
// payload carried inside the Noise messages.
//
// The input goes to `ChannelMessage(decoding:)` and to `HandshakePayload(decoding:)`. Decoding is
// strict (no trailing bytes, no unknown type), so whatever decodes must encode back to exactly
// the input; everything else must be a `WireFormatError`.
func fuzzChannel(_ bytes: [UInt8]) {
    if let message = try? ChannelMessage(decoding: bytes), message.encode() != bytes {
        fuzzFailure("channel message \(message) does not encode back to its input")
    }
}

// libFuzzer harness `handshakepayload`: `HandshakePayload(decoding:)` (what each side says inside
// the encrypted Noise handshake). A decoded payload encodes back to the input, except that only
// bits 0 and 1 of the flags byte are kept.
func fuzzHandshakePayload(_ bytes: [UInt8]) {
    guard let payload = try? HandshakePayload(decoding: bytes) else {
        if bytes.count == HandshakePayload.encodedSize, bytes.first == HandshakePayload.version {
            fuzzFailure("a well-sized payload of the current version was refused")
        }
        return
    }
    var expected = bytes
    expected[expected.count - 1] &= 3
    if payload.encode() != expected { fuzzFailure("handshake payload does not encode back to its input") }
}
