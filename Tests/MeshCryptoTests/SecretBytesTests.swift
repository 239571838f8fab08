import Testing
@testable import MeshCrypto

@Suite struct SecretBytesTests {
    @Test func descriptionNeverShowsTheBytes() {
        let secret = SecretBytes([0xAB, 0xCD, 0xEF, 0x42])
        #expect(secret.description == "SecretBytes(4 bytes, redacted)")
        #expect("\(secret)" == "SecretBytes(4 bytes, redacted)")
        #expect(String(reflecting: secret) == "SecretBytes(4 bytes, redacted)")
        var dumped = ""
        dump(secret, to: &dumped)
        #expect(!dumped.contains("171") && !dumped.lowercased().contains("ab"))
    }

    @Test func equalityComparesContentAndLength() {
        #expect(SecretBytes([1, 2, 3]) == SecretBytes([1, 2, 3]))
        #expect(SecretBytes([1, 2, 3]) != SecretBytes([1, 2, 4]))
        #expect(SecretBytes([1, 2, 3]) != SecretBytes([1, 2]))
        #expect(SecretBytes([]) == SecretBytes([]))
    }

    @Test func randomIsRandomAndSized() {
        let a = SecretBytes.random(count: 32), b = SecretBytes.random(count: 32)
        #expect(a.count == 32)
        #expect(a != b)
    }

    @Test func keyPairDerivesPublicKeyAndRejectsBadLength() throws {
        let pair = X25519KeyPair.generate()
        let again = try X25519KeyPair(privateKey: pair.privateKey)
        #expect(again.publicKey == pair.publicKey)
        #expect(throws: CryptoError.self) { try X25519KeyPair(privateKey: SecretBytes([1, 2, 3])) }
    }
}
