import MeshCrypto
import Testing

/// A source that repeats a counter's bytes: the same instance state gives the same bytes.
private final class CountingSource: RandomSource, @unchecked Sendable {
    private var counter: UInt8

    init(start: UInt8) { counter = start }

    func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        for index in buffer.indices {
            counter &+= 1
            buffer[index] = counter
        }
    }
}

@Suite("Random source")
struct RandomSourceTests {
    @Test("a key pair drawn from an injected source is that source's, and libsodium's differ each time")
    func keyPairs() throws {
        let first = X25519KeyPair.generate(using: CountingSource(start: 0))
        let again = X25519KeyPair.generate(using: CountingSource(start: 0))
        let other = X25519KeyPair.generate(using: CountingSource(start: 9))
        #expect(first.publicKey == again.publicKey)
        #expect(first.publicKey != other.publicKey)
        let expected = try X25519KeyPair(privateKey: SecretBytes((1...32).map { UInt8($0) }))
        #expect(first.publicKey == expected.publicKey)
        #expect(X25519KeyPair.generate().publicKey != X25519KeyPair.generate().publicKey)
        #expect(X25519KeyPair.generate(using: SodiumRandomSource()).publicKey != first.publicKey)
    }

    @Test("a handshake's ephemeral comes from its source: the same source, the same message 1")
    func handshakeEphemeral() throws {
        let initiator = try X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 3, count: 32)))
        let responder = try X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 4, count: 32)))
        func message1(_ source: any RandomSource) throws -> [UInt8] {
            var noise = try NoiseHandshake(protocolName: "Noise_IKpsk2_25519_ChaChaPoly_SHA256", initiator: true,
                                           localStatic: initiator, remoteStatic: responder.publicKey,
                                           preSharedKeys: [SecretBytes([UInt8](repeating: 5, count: 32))], random: source)
            return try noise.writeMessage(payload: [1, 2, 3])
        }
        let a = try message1(CountingSource(start: 0)), b = try message1(CountingSource(start: 0))
        #expect(a == b)
        #expect(Array(a.prefix(32)) == X25519KeyPair.generate(using: CountingSource(start: 0)).publicKey)
        #expect(try message1(SodiumRandomSource()) != a)
    }

    @Test("the generator adapter draws its words from the source")
    func generator() {
        var generator = RandomSourceGenerator(CountingSource(start: 0))
        #expect(generator.next() == 0x0807_0605_0403_0201)
        #expect(generator.next() == 0x100F_0E0D_0C0B_0A09)
    }
}
