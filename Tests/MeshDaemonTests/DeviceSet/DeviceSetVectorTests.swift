import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

/// The device set's test vectors in docs/PROTOCOL.md ("Test vectors", device set): a genesis, an
/// add countersigned by the new device, the epoch and digest of that roster, and the derived
/// pair key of two members, all from fixed keys. The code must write these bytes and the page
/// must show them.
@Suite("Device set vectors as docs/PROTOCOL.md shows them")
struct DeviceSetVectorTests {
    static let laptop = try! X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 0x11, count: 32)))
    static let phone = try! X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 0x22, count: 32)))
    static let desktop = try! X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: 0x33, count: 32)))
    static let time: Int64 = 1_700_000_000_000_000_000

    static func vectors() throws -> [(String, [UInt8])] {
        let laptopSigning = SigningKeyPair.derived(from: laptop), phoneSigning = SigningKeyPair.derived(from: phone)
        let genesis = try RosterRecord.make(kind: .genesis, parents: [], signer: laptopSigning, time: time,
                                            subject: laptop.publicKey, name: "laptop")
        let add = try RosterRecord.make(kind: .add, parents: [genesis.hash], signer: laptopSigning, time: time + 1_000_000_000,
                                        subject: phone.publicKey, subjectSigningKey: phoneSigning.publicKey, name: "phone")
            .countersigned(by: phoneSigning)
        let roster = Roster(records: [genesis, add])
        let view = RosterView(roster, from: laptop.publicKey, signingKey: laptopSigning.publicKey)
        let pairKey = try #require(DeviceSetKeys.pairKey(own: phone, peer: desktop.publicKey, epoch: view.epoch))
        return [
            ("laptop signing public key", laptopSigning.publicKey),
            ("genesis", genesis.encoded),
            ("add", add.encoded),
            ("epoch", view.epoch),
            ("roster digest", roster.digest),
            ("derived pair key phone–desktop", pairKey.withUnsafeBytes { [UInt8]($0) }),
        ]
    }

    @Test func thePageShowsTheBytesTheCodeWrites() throws {
        // This file sits one folder deeper than the page reader expects.
        let page = try ProtocolPage.compactText(file: URL(fileURLWithPath: #filePath).deletingLastPathComponent().path)
        for (what, bytes) in try Self.vectors() {
            let hex = ProtocolPage.hex(bytes)
            print("device set vector \(what): \(hex)")
            #expect(page.contains(ProtocolPage.compact(hex)), "docs/PROTOCOL.md does not show the \(what): \(hex)")
        }
    }

    @Test func theVectorsVerifyAndMakeBothMembers() throws {
        let vectors = try Self.vectors()
        let genesis = try RosterRecord.decode(vectors[1].1), add = try RosterRecord.decode(vectors[2].1)
        let view = RosterView(Roster(records: [add, genesis]), from: Self.phone.publicKey, signingKey: SigningKeyPair.derived(from: Self.phone).publicKey)
        #expect(Set(view.members.keys) == [DeviceID(publicKey: Self.laptop.publicKey), DeviceID(publicKey: Self.phone.publicKey)])
        #expect(view.members[DeviceID(publicKey: Self.phone.publicKey)]?.name == "phone")
        #expect(view.epoch == vectors[3].1)
        let mine = try #require(DeviceSetKeys.pairKey(own: Self.desktop, peer: Self.phone.publicKey, epoch: view.epoch))
        #expect(mine.withUnsafeBytes { [UInt8]($0) } == vectors[5].1, "both ends derive the same key")
    }
}
