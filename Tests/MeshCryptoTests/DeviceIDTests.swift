import Foundation
import Testing
@testable import MeshCrypto

@Suite struct DeviceIDTests {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")

    @Test func roundTripsAndLooksRight() throws {
        let id = DeviceID(publicKey: Fixtures.keyPair(1).publicKey)
        let text = id.description
        #expect(text.split(separator: "-").count == 8)
        #expect(text.split(separator: "-").allSatisfy { $0.count == 7 })
        #expect(try DeviceID.parse(text) == id)
        #expect(try DeviceID.parse(text.lowercased().replacingOccurrences(of: "-", with: " ")) == id)
        #expect(try DeviceID.parse(text.replacingOccurrences(of: "-", with: "")) == id)
        #expect(id.short == String(text.prefix(7)))
        #expect(DeviceID(publicKey: Fixtures.keyPair(2).publicKey) != id)
    }

    @Test func everySingleTypoIsCaughtAndTheGroupNamed() throws {
        for seed in UInt8(1)...UInt8(4) {
            let text = Array(DeviceID(publicKey: Fixtures.keyPair(seed).publicKey).description.filter { $0 != "-" })
            for position in text.indices {
                for replacement in Self.alphabet where replacement != text[position] {
                    var typo = text
                    typo[position] = replacement
                    let error = #expect(throws: DeviceIDError.self) { try DeviceID.parse(String(typo)) }
                    #expect(error?.message.contains("group \(position / 7 + 1)") == true)
                }
            }
        }
    }

    @Test func everySwapWithinAGroupIsCaught() throws {
        for seed in UInt8(1)...UInt8(4) {
            let text = Array(DeviceID(publicKey: Fixtures.keyPair(seed).publicKey).description.filter { $0 != "-" })
            for group in 0..<8 {
                for i in (group * 7)..<(group * 7 + 7) {
                    for j in (i + 1)..<(group * 7 + 7) where text[i] != text[j] {
                        var swapped = text
                        swapped.swapAt(i, j)
                        #expect(throws: DeviceIDError.self) { try DeviceID.parse(String(swapped)) }
                    }
                }
            }
            // Adjacent characters across a group boundary.
            for boundary in stride(from: 6, to: 55, by: 7) where text[boundary] != text[boundary + 1] {
                var swapped = text
                swapped.swapAt(boundary, boundary + 1)
                #expect(throws: DeviceIDError.self) { try DeviceID.parse(String(swapped)) }
            }
        }
    }

    @Test func wrongLengthAndBadCharactersAreExplained() {
        let short = #expect(throws: DeviceIDError.self) { try DeviceID.parse("ABC-DEF") }
        #expect(short?.message.contains("56 characters") == true)
        let text = DeviceID(publicKey: Fixtures.keyPair(1).publicKey).description
        let bad = #expect(throws: DeviceIDError.self) { try DeviceID.parse("!" + text.dropFirst()) }
        #expect(bad?.message.contains("group 1") == true)
    }

    @Test func codableUsesTheStringForm() throws {
        let id = DeviceID(publicKey: Fixtures.keyPair(3).publicKey)
        let data = try JSONEncoder().encode([id])
        #expect(String(decoding: data, as: UTF8.self) == "[\"\(id)\"]")
        #expect(try JSONDecoder().decode([DeviceID].self, from: data) == [id])
    }
}

@Suite struct TypedInputTests {
    /// Characters whose upper case is several characters must be refused, not crash.
    @Test func multiCharacterUppercaseIsRejected() {
        let id = DeviceID(publicKey: Fixtures.keyPair(1).publicKey).description
        for odd in ["ß", "ﬁ", "ŉ", "é", "😀"] {
            #expect(throws: DeviceIDError.self) { try DeviceID.parse(odd + id.dropFirst()) }
            #expect(throws: CryptoError.self) { try PairingCode.parse(odd + "KQ4-MX9D") }
        }
    }
}

@Suite struct KnownAnswerTests {
    /// Pins the device-ID format (SHA-256 prefix, base32 groups, GF(32) check) so it cannot drift:
    /// IDs are stored by peers and read aloud by people.
    @Test func deviceIDFormatIsStable() throws {
        let id = DeviceID(publicKey: Array(0..<32))
        #expect(id.description == "MMG42KY-LGYQZWG-NEISKRW-ELXMS3Q-J72BFJ2-E4OMW3C-FSFLYGM-4FQG6X6")
        #expect(id.short == "MMG42KY")
        #expect(try DeviceID.parse("mmg42ky lgyqzwg neiskrw elxms3q j72bfj2 e4omw3c fsflygm 4fqg6x6") == id)
    }

    @Test func pairingCodeCheckIsStable() throws {
        #expect(try PairingCode.parse("3MH4-KX97").description == "3MH4-KX97")
        #expect(try PairingCode.parse("3mh4 kx97").secret == SecretBytes(Array("3MH4KX9".utf8)))
    }
}
