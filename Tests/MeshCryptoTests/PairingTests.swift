import Foundation
import Testing
import MeshCore
@testable import MeshCrypto

@Suite struct PairingTests {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    @Test func codeLooksRightAndParsesTolerantly() throws {
        let code = PairingCode.generate()
        let text = code.description
        #expect(text.count == 9 && Array(text)[4] == "-")
        #expect(try PairingCode.parse(text) == code)
        #expect(try PairingCode.parse(text.lowercased()) == code)
        #expect(try PairingCode.parse(text.replacingOccurrences(of: "-", with: " ")) == code)
        #expect(try PairingCode.parse(" " + text.replacingOccurrences(of: "-", with: "") + " ") == code)
        #expect(code.secret.count == 7)  // 7 × 5 = 35 random bits; the first 2 characters are the public hint
        #expect(PairingCode.generate() != code)
        #expect(String(reflecting: code) == "PairingCode(redacted)")
    }

    @Test func everySingleTypoAndSwapIsCaught() throws {
        var rng = SeededGenerator(test: "everySingleTypoAndSwapIsCaught")
        for _ in 0..<50 {
            let symbols = (0..<7).map { _ in Self.alphabet[Int.random(in: 0..<32, using: &rng)] }
            let check = Base32Check.checkValue(symbols.map { UInt8(Self.alphabet.firstIndex(of: $0)!) },
                                               salt: PairingCode.checkSalt)
            let text = symbols + [Self.alphabet[Int(check)]]
            #expect(throws: Never.self) { try PairingCode.parse(String(text)) }
            for position in text.indices {
                for replacement in Self.alphabet where replacement != text[position] {
                    var typo = text
                    typo[position] = replacement
                    let error = #expect(throws: CryptoError.self) { try PairingCode.parse(String(typo)) }
                    #expect(error?.code == .invalidPairingCode)
                }
                for other in (position + 1)..<text.count where text[position] != text[other] {
                    var swapped = text
                    swapped.swapAt(position, other)
                    #expect(throws: CryptoError.self) { try PairingCode.parse(String(swapped)) }
                }
            }
        }
    }

    @Test func publicHintIsTheFirstTwoCharactersInCanonicalForm() throws {
        let code = try PairingCode.parse(validCode(prefix: "7K"))
        #expect(code.publicHint == "7K")
        // Typed sloppily (lower case, O for 0, I for 1), the hint is still the canonical one.
        let zero = try validCode(prefix: "01")
        let sloppy = zero.lowercased().replacingOccurrences(of: "0", with: "o").replacingOccurrences(of: "1", with: "i")
        #expect(try PairingCode.parse(sloppy).publicHint == "01")
        // The hint does not determine the rest: many codes share it.
        var rests = Set<String>()
        for _ in 0..<64 {
            let generated = PairingCode.generate()
            #expect(generated.publicHint.count == PairingCode.publicHintLength)
            #expect(generated.description.hasPrefix(generated.publicHint))
            rests.insert(String(generated.description.dropFirst(2)))
        }
        #expect(rests.count > 60)
    }

    /// A valid code text (right check character) starting with `prefix`.
    private func validCode(prefix: String) throws -> String {
        let values = (prefix + "Q4MX9").map { UInt8(Self.alphabet.firstIndex(of: $0)!) }
        let check = Base32Check.checkValue(values, salt: PairingCode.checkSalt)
        let text = String((values + [check]).map { Self.alphabet[Int($0)] })
        return String(text.prefix(4)) + "-" + String(text.dropFirst(4))
    }

    @Test func parseSaysWhatIsWrong() {
        let length = #expect(throws: CryptoError.self) { try PairingCode.parse("7KQ4-MX9") }
        #expect(length?.message.contains("8 characters") == true)
        let character = #expect(throws: CryptoError.self) { try PairingCode.parse("7KQ4-MX9U") }
        #expect(character?.message.contains("character 8") == true)
    }

    @Test func cpaceAgreesOnlyWithTheSameCode() throws {
        let code = PairingCode.generate()
        let ci = Array("pairing-v1".utf8), sid = Array(SecretBytes.random(count: 16).unsafeCopy)
        let a = try CPace(role: .initiator, password: code.secret.unsafeCopy, channelIdentifier: ci, sessionID: sid, associatedData: [1])
        let b = try CPace(role: .responder, password: code.secret.unsafeCopy, channelIdentifier: ci, sessionID: sid, associatedData: [2])
        let iskA = try a.finish(peerShare: b.publicShare, peerAssociatedData: [2])
        let iskB = try b.finish(peerShare: a.publicShare, peerAssociatedData: [1])
        #expect(iskA == iskB)
        let transcript = a.transcript(peerShare: b.publicShare, peerAssociatedData: [2])
        #expect(transcript == b.transcript(peerShare: a.publicShare, peerAssociatedData: [1]))
        let shown = Pairing.verificationString(isk: iskA, transcript: transcript)
        #expect(shown == Pairing.verificationString(isk: iskB, transcript: transcript))
        #expect(shown.count == 9)

        let other = PairingCode.generate()
        let mallory = try CPace(role: .responder, password: other.secret.unsafeCopy, channelIdentifier: ci, sessionID: sid, associatedData: [2])
        #expect(try a.finish(peerShare: mallory.publicShare, peerAssociatedData: [2])
                != mallory.finish(peerShare: a.publicShare, peerAssociatedData: [1]))
    }

    @Test func identityAndInvalidSharesAreRejected() throws {
        let a = try CPace(role: .initiator, password: [1], channelIdentifier: [], sessionID: [], associatedData: [])
        let identity = #expect(throws: CryptoError.self) { try a.finish(peerShare: [UInt8](repeating: 0, count: 32), peerAssociatedData: []) }
        #expect(identity?.code == .weakSharedSecret || identity?.code == .invalidKey)
        #expect(throws: CryptoError.self) { try a.finish(peerShare: [UInt8](repeating: 0xFF, count: 32), peerAssociatedData: []) }
        #expect(throws: CryptoError.self) { try a.finish(peerShare: [1, 2, 3], peerAssociatedData: []) }
    }

    @Test func pairKeyIsOrderIndependent() {
        let isk = SecretBytes.random(count: 64)
        let a = Fixtures.keyPair(1).publicKey, b = Fixtures.keyPair(2).publicKey
        #expect(Pairing.pairKey(isk: isk, publicKeyA: a, publicKeyB: b) == Pairing.pairKey(isk: isk, publicKeyA: b, publicKeyB: a))
        #expect(Pairing.pairKey(isk: isk, publicKeyA: a, publicKeyB: b).count == 32)
        #expect(Pairing.pairKey(isk: SecretBytes.random(count: 64), publicKeyA: a, publicKeyB: b)
                != Pairing.pairKey(isk: isk, publicKeyA: a, publicKeyB: b))
    }
}
