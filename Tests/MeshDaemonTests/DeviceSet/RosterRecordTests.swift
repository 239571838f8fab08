import MeshCore
import MeshCrypto
import Testing
@testable import MeshDaemon

/// A device of the roster tests: X25519 keys from fixed private bytes, and the Ed25519 signing
/// key derived from them as the daemon derives it.
struct RosterTestDevice: Sendable {
    let keys: X25519KeyPair
    let signing: SigningKeyPair

    init(_ byte: UInt8) {
        // 32 fixed bytes are always a valid X25519 private key.
        keys = try! X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: byte, count: 32)))
        signing = .derived(from: keys)
    }

    var deviceKey: [UInt8] { keys.publicKey }
    var id: DeviceID { DeviceID(publicKey: keys.publicKey) }

    /// Devices 1…70 (private key bytes 1…70), derived once for every roster test.
    static let numbered: [RosterTestDevice] = (1...70).map { RosterTestDevice(UInt8($0)) }
}

/// A record written byte by byte after docs/PROTOCOL.md, independently of `RosterRecord`'s
/// encoder, so a test can build exactly the bytes it means (well formed or not) and sign them.
///
/// ```
/// version u8 | kind u8 | n u8 | n × parent (32) | author (32) | time i64 BE
///   genesis: device key (32) | name len u8 | name
///   add:     device key (32) | signing key (32) | name len u8 | name
///   remove:  device key (32)
///   rename:  name len u8 | name
/// | author signature (64) | add: new device's signature (64)
/// ```
struct RawRosterRecord {
    var version: UInt8 = 1
    var kind: UInt8
    var parents: [[UInt8]] = []
    var author: RosterTestDevice
    var time: Int64 = 1_700_000_000_000_000_000
    var subject: [UInt8] = []
    var subjectSigningKey: [UInt8] = []
    var name: [UInt8] = []

    var unsigned: [UInt8] {
        var out: [UInt8] = [version, kind, UInt8(parents.count)]
        for parent in parents { out += parent }
        out += author.signing.publicKey
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: time >> Int64(shift))) }
        switch kind {
        case 1: out += subject + [UInt8(name.count)] + name
        case 2: out += subject + subjectSigningKey + [UInt8(name.count)] + name
        case 3: out += subject
        case 4: out += [UInt8(name.count)] + name
        default: break
        }
        return out
    }

    /// The record signed by its author and, for an add, countersigned by `subjectSigner`.
    func signed(countersignedBy subjectSigner: RosterTestDevice? = nil) -> [UInt8] {
        let message = RosterRecord.signatureContext + unsigned
        var bytes = unsigned + author.signing.sign(message)
        if kind == 2 {
            bytes += subjectSigner?.signing.sign(message) ?? [UInt8](repeating: 0, count: SigningKeyPair.signatureLength)
        }
        return bytes
    }
}

/// The roster record codec: what one device signs is what every other device reads, and
/// nothing else reads as a record (docs/PROTOCOL.md, "The device set").
@Suite("Roster record codec")
struct RosterRecordTests {
    static let alice = RosterTestDevice.numbered[0]
    static let bob = RosterTestDevice.numbered[1]
    static let carol = RosterTestDevice.numbered[2]
    /// Two parent hashes, ascending.
    static let parents: [[UInt8]] = [[UInt8](repeating: 0x11, count: 32), [UInt8](repeating: 0xEE, count: 32)]

    /// One signed (and, for an add, countersigned) record of `kind`.
    static func sample(_ kind: RosterRecord.Kind, time: Int64 = 1_700_000_000_123_456_789,
                       name: String = "Kitchen laptop") throws -> RosterRecord {
        switch kind {
        case .genesis:
            return try RosterRecord.make(kind: .genesis, parents: [], signer: alice.signing, time: time,
                                         subject: alice.deviceKey, name: name)
        case .add:
            return try RosterRecord.make(kind: .add, parents: parents, signer: alice.signing, time: time, subject: bob.deviceKey,
                                         subjectSigningKey: bob.signing.publicKey, name: name).countersigned(by: bob.signing)
        case .remove:
            return try RosterRecord.make(kind: .remove, parents: parents, signer: alice.signing, time: time, subject: bob.deviceKey)
        case .rename:
            return try RosterRecord.make(kind: .rename, parents: parents, signer: alice.signing, time: time, name: name)
        case .rotate:
            return try RosterRecord.make(kind: .rotate, parents: parents, signer: alice.signing, time: time)
        }
    }

    /// The same record as `sample(kind)`, built byte by byte.
    static func raw(_ kind: RosterRecord.Kind) -> RawRosterRecord {
        var raw = RawRosterRecord(kind: kind.rawValue, parents: kind == .genesis ? [] : parents, author: alice,
                                  time: 1_700_000_000_123_456_789)
        switch kind {
        case .genesis: raw.subject = alice.deviceKey; raw.name = Array("Kitchen laptop".utf8)
        case .add:
            raw.subject = bob.deviceKey; raw.subjectSigningKey = bob.signing.publicKey; raw.name = Array("Kitchen laptop".utf8)
        case .remove: raw.subject = bob.deviceKey
        case .rename: raw.name = Array("Kitchen laptop".utf8)
        case .rotate: break
        }
        return raw
    }

    @Test(arguments: RosterRecord.Kind.allCases)
    func everyKindRoundTripsWithItsSignaturesChecked(kind: RosterRecord.Kind) throws {
        let record = try Self.sample(kind)
        let decoded = try RosterRecord.decode(record.encoded)
        #expect(decoded == record)
        #expect(decoded.kind == kind)
        #expect(decoded.parents == (kind == .genesis ? [] : Self.parents))
        #expect(decoded.author == Self.alice.signing.publicKey)
        #expect(decoded.time == 1_700_000_000_123_456_789)
        #expect(decoded.subject == record.subject)
        #expect(decoded.subjectSigningKey == record.subjectSigningKey)
        #expect(decoded.name == record.name)
        #expect(decoded.hash == PairingSupport.sha256(record.encoded))
        #expect(decoded.unsignedBytes == Self.raw(kind).unsigned)
    }

    /// The bytes are the documented layout, so another implementation reads them the same.
    @Test(arguments: RosterRecord.Kind.allCases)
    func theEncodingIsTheDocumentedLayout(kind: RosterRecord.Kind) throws {
        let record = try Self.sample(kind)
        #expect(record.encoded == Self.raw(kind).signed(countersignedBy: Self.bob))
        #expect(try RosterRecord.decode(Self.raw(kind).signed(countersignedBy: Self.bob)) == record)
    }

    @Test(arguments: [Int64.min, -1, 0, 1, Int64.max])
    func timesRoundTripWholeIncludingNegativeOnes(time: Int64) throws {
        let record = try Self.sample(.rename, time: time)
        #expect(try RosterRecord.decode(record.encoded).time == time)
    }

    /// Names are 1…64 bytes of UTF-8: a 64-byte name of multi-byte characters survives whole.
    @Test func aSixtyFourByteUnicodeNameRoundTrips() throws {
        let name = String(repeating: "ü", count: 30) + "📱"  // 60 + 4 bytes
        #expect(name.utf8.count == 64)
        for kind in [RosterRecord.Kind.genesis, .add, .rename] {
            #expect(try RosterRecord.decode(Self.sample(kind, name: name).encoded).name == name)
        }
    }

    @Test func makeSortsAndDeduplicatesParents() throws {
        let record = try RosterRecord.make(kind: .rotate, parents: [Self.parents[1], Self.parents[0], Self.parents[1]],
                                           signer: Self.alice.signing, time: 5)
        #expect(record.parents == Self.parents)
        #expect(try RosterRecord.decode(record.encoded) == record)
    }

    /// Every proper prefix of every kind is refused, and so is a record with a byte after it.
    @Test(arguments: RosterRecord.Kind.allCases)
    func truncatedOrExtendedBytesAreMalformed(kind: RosterRecord.Kind) throws {
        let bytes = try Self.sample(kind).encoded
        for length in 0..<bytes.count {
            #expect(throws: RosterRecord.Malformed.self, "\(kind) cut to \(length) bytes") {
                try RosterRecord.decode(Array(bytes.prefix(length)), checkingSignatures: false)
            }
        }
        for extra in [[UInt8(0)], [0xFF, 0xFF]] {
            #expect(throws: RosterRecord.Malformed.self, "\(kind) with \(extra.count) extra bytes") {
                try RosterRecord.decode(bytes + extra, checkingSignatures: false)
            }
        }
        #expect(throws: RosterRecord.Malformed.self) {
            try RosterRecord.decode([UInt8](repeating: 1, count: RosterRecord.maximumEncodedBytes + 1), checkingSignatures: false)
        }
    }

    /// Well-signed bytes that break one rule each: decode refuses them even without checking
    /// signatures (the signatures are valid; the structure is what is wrong).
    static func structuralFaults() -> [(String, RawRosterRecord, RosterTestDevice?)] {
        let alice = Self.alice, bob = Self.bob, parents = Self.parents
        var cases: [(String, RawRosterRecord, RosterTestDevice?)] = []
        func variant(_ description: String, _ base: RosterRecord.Kind, countersigner: RosterTestDevice? = bob,
                     _ change: (inout RawRosterRecord) -> Void) {
            var record = Self.raw(base)
            change(&record)
            cases.append((description, record, countersigner))
        }
        variant("version 0", .rename) { $0.version = 0 }
        variant("version 2", .rename) { $0.version = 2 }
        variant("kind 0", .rename) { $0.kind = 0 }
        variant("kind 6", .rotate) { $0.kind = 6 }
        variant("kind 255", .rotate) { $0.kind = 255 }
        variant("parents descending", .remove) { $0.parents.reverse() }
        variant("a parent twice", .remove) { $0.parents = [parents[0], parents[0]] }
        variant("a parent twice among others", .rotate) { $0.parents = [parents[0], parents[1], parents[1]] }
        variant("17 parents", .rotate) { raw in
            raw.parents = (0..<17).map { [UInt8](repeating: UInt8($0), count: 32) }
        }
        variant("a genesis with a parent", .genesis) { $0.parents = [parents[0]] }
        variant("an add without parents", .add) { $0.parents = [] }
        variant("a remove without parents", .remove) { $0.parents = [] }
        variant("a rename without parents", .rename) { $0.parents = [] }
        variant("a rotate without parents", .rotate) { $0.parents = [] }
        variant("an empty genesis name", .genesis) { $0.name = [] }
        variant("an empty add name", .add) { $0.name = [] }
        variant("an empty rename", .rename) { $0.name = [] }
        variant("a 65-byte genesis name", .genesis) { $0.name = [UInt8](repeating: 0x61, count: 65) }
        variant("a 65-byte add name", .add) { $0.name = [UInt8](repeating: 0x61, count: 65) }
        variant("a 65-byte rename", .rename) { $0.name = [UInt8](repeating: 0x61, count: 65) }
        variant("a name of invalid UTF-8", .rename) { $0.name = [0x61, 0xFF, 0x62] }
        variant("a name cut inside a character", .genesis) { $0.name = [0xC3] }
        variant("a name with an overlong encoding", .add) { $0.name = [0xC0, 0xAF] }
        variant("an add of the author's own signing key", .add, countersigner: alice) {
            $0.subjectSigningKey = alice.signing.publicKey
        }
        return cases
    }

    @Test func recordsThatBreakOneRuleAreMalformed() {
        for (description, raw, countersigner) in Self.structuralFaults() {
            let bytes = raw.signed(countersignedBy: countersigner)
            #expect(throws: RosterRecord.Malformed.self, "\(description)") {
                try RosterRecord.decode(bytes, checkingSignatures: false)
            }
            #expect(throws: RosterRecord.Malformed.self, "\(description)") { try RosterRecord.decode(bytes) }
        }
    }

    /// The faults' well-formed twins decode, so the faults above are refused for their fault.
    @Test(arguments: RosterRecord.Kind.allCases)
    func theRawBuilderMakesRecordsThatDecode(kind: RosterRecord.Kind) throws {
        var raw = Self.raw(kind)
        if kind != .genesis { raw.parents = (0..<16).map { [UInt8](repeating: UInt8($0), count: 32) } }
        if kind == .genesis || kind == .add || kind == .rename { raw.name = [UInt8](repeating: 0x61, count: 64) }
        #expect(try RosterRecord.decode(raw.signed(countersignedBy: Self.bob)).kind == kind)
    }

    @Test func makeRefusesNamesOfNoneOrMoreThanSixtyFourBytes() {
        for name in ["", String(repeating: "a", count: 65), String(repeating: "ü", count: 33)] {
            #expect(throws: RosterRecord.Malformed.self, "\(name.utf8.count)-byte name") {
                try RosterRecord.make(kind: .rename, parents: Self.parents, signer: Self.alice.signing, time: 1, name: name)
            }
            #expect(throws: RosterRecord.Malformed.self, "\(name.utf8.count)-byte genesis name") {
                try RosterRecord.make(kind: .genesis, parents: [], signer: Self.alice.signing, time: 1,
                                      subject: Self.alice.deviceKey, name: name)
            }
        }
    }

    @Test func makeRefusesAGenesisWithParentsAndOtherKindsWithout() {
        #expect(throws: RosterRecord.Malformed.self) {
            try RosterRecord.make(kind: .genesis, parents: Self.parents, signer: Self.alice.signing, time: 1,
                                  subject: Self.alice.deviceKey, name: "a")
        }
        for kind in [RosterRecord.Kind.add, .remove, .rename, .rotate] {
            #expect(throws: RosterRecord.Malformed.self, "\(kind)") {
                try RosterRecord.make(kind: kind, parents: [], signer: Self.alice.signing, time: 1, subject: Self.bob.deviceKey,
                                      subjectSigningKey: Self.bob.signing.publicKey, name: "b")
            }
        }
    }

    /// Any one bit flipped anywhere in a signed record, and the record no longer decodes.
    @Test(arguments: RosterRecord.Kind.allCases)
    func aFlippedBitAnywhereFailsTheCheck(kind: RosterRecord.Kind) throws {
        let bytes = try Self.sample(kind).encoded
        var accepted: [Int] = []
        for bit in 0..<(bytes.count * 8) {
            var flipped = bytes
            flipped[bit / 8] ^= 1 << UInt8(bit % 8)
            if (try? RosterRecord.decode(flipped)) != nil { accepted.append(bit) }
        }
        #expect(accepted.isEmpty, "\(kind): bits \(accepted) flipped still decode")
    }

    /// A signature by another key, or over another record, is refused.
    @Test func aSignatureByAnotherKeyOrOfAnotherRecordFails() throws {
        var raw = Self.raw(.remove)
        let good = raw.signed()
        raw.author = Self.carol  // carol signs, the record still names alice
        let carolSigned = raw.signed()
        let forged = Array(good.dropLast(64)) + carolSigned.suffix(64)
        #expect(throws: RosterRecord.Malformed.self) { try RosterRecord.decode(forged) }
        let other = try Self.sample(.rotate).encoded
        let swapped = Array(good.dropLast(64)) + other.suffix(64)
        #expect(throws: RosterRecord.Malformed.self) { try RosterRecord.decode(swapped) }
        #expect(try RosterRecord.decode(good).kind == .remove)
    }

    /// An add is valid only with the new device's signature: the proposal (zero placeholder)
    /// is refused by a checking decode, and so is one countersigned by a third device.
    @Test func anAddWithoutTheNewDevicesSignatureFailsTheCheck() throws {
        let proposal = try RosterRecord.make(kind: .add, parents: Self.parents, signer: Self.alice.signing, time: 9,
                                             subject: Self.bob.deviceKey, subjectSigningKey: Self.bob.signing.publicKey, name: "Bob")
        #expect(proposal.subjectSignature == [UInt8](repeating: 0, count: 64))
        #expect(throws: RosterRecord.Malformed.self) { try RosterRecord.decode(proposal.encoded) }
        #expect(try RosterRecord.decode(proposal.encoded, checkingSignatures: false) == proposal)

        let byCarol = Self.raw(.add).signed(countersignedBy: Self.carol)
        #expect(throws: RosterRecord.Malformed.self) { try RosterRecord.decode(byCarol) }

        let signed = try proposal.countersigned(by: Self.bob.signing)
        #expect(try RosterRecord.decode(signed.encoded) == signed)
        #expect(signed.unsignedBytes == proposal.unsignedBytes)
        #expect(signed.authorSignature == proposal.authorSignature)
        #expect(signed.hash != proposal.hash)
    }

    @Test func countersigningWithAKeyTheAddDoesNotNameThrows() throws {
        let proposal = try RosterRecord.make(kind: .add, parents: Self.parents, signer: Self.alice.signing, time: 9,
                                             subject: Self.bob.deviceKey, subjectSigningKey: Self.bob.signing.publicKey, name: "Bob")
        #expect(throws: RosterRecord.Malformed.self) { try proposal.countersigned(by: Self.carol.signing) }
        #expect(throws: RosterRecord.Malformed.self) { try proposal.countersigned(by: Self.alice.signing) }
        #expect(throws: RosterRecord.Malformed.self) { try Self.sample(.rename).countersigned(by: Self.bob.signing) }
        // Countersigning again (an already countersigned add) gives the same record.
        let signed = try proposal.countersigned(by: Self.bob.signing)
        #expect(try signed.countersigned(by: Self.bob.signing) == signed)
    }

    @Test func theSigningKeyIsDerivedFromTheDeviceKeyAndDiffersPerDevice() {
        let again = RosterTestDevice(1)
        #expect(again.signing.publicKey == Self.alice.signing.publicKey)
        #expect(Self.alice.signing.publicKey != Self.bob.signing.publicKey)
        #expect(Self.alice.signing.publicKey != Self.alice.deviceKey)
        let message = Array("hello".utf8)
        let signature = Self.alice.signing.sign(message)
        #expect(SigningKeyPair.verify(signature, of: message, publicKey: Self.alice.signing.publicKey))
        #expect(!SigningKeyPair.verify(signature, of: message, publicKey: Self.bob.signing.publicKey))
        #expect(!SigningKeyPair.verify(signature, of: Array("hellp".utf8), publicKey: Self.alice.signing.publicKey))
        #expect(!SigningKeyPair.verify(Array(signature.prefix(63)), of: message, publicKey: Self.alice.signing.publicKey))
    }
}
