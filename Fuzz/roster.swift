import Foundation
import MeshCrypto
@testable import MeshDaemon

// libFuzzer harness `roster`: what a paired member of the device set controls.
//
// The input's first byte picks one of: a device set channel message (types 0x0B–0x0F, the rest
// as its body), a roster record, or a roster file. Each must decode or throw, within its
// bounds; a record that decodes encodes to the same bytes; whatever records decode are merged
// into a roster whose membership is computed (bounded by the roster's own limits), and a
// roster file that loads must save and load back the same records.
func fuzzRoster(_ bytes: [UInt8]) {
    guard let selector = bytes.first else { return }
    let body = Array(bytes.dropFirst())
    switch selector % 3 {
    case 0:
        var reader = WireReader(body.dropFirst().map { $0 })
        let type = 0x0B + (body.first ?? 0) % 5
        guard let message = try? DeviceSetMessage(type: type, reader: &reader) else { return }
        var writer = WireWriter()
        message.encodeBody(into: &writer)
        if case .rosterRecords(let records, _) = message {
            guard records.count <= DeviceSetMessage.maximumRecords else { fuzzFailure("more records than the bound") }
            var roster = Roster()
            roster.merge(records.compactMap { try? RosterRecord.decode($0) })
            guard roster.count <= Roster.maximumRecords, roster.pending.count <= Roster.maximumPending else {
                fuzzFailure("a roster past its bounds")
            }
            _ = RosterView(roster, from: FuzzKeys.staticKey.publicKey, signingKey: SigningKeyPair.derived(from: FuzzKeys.staticKey).publicKey)
        }
    case 1:
        guard let record = try? RosterRecord.decode(body) else { return }
        guard record.encoded == body, record.hash == PairingSupport.sha256(body) else { fuzzFailure("a record that does not encode back") }
        var roster = Roster()
        _ = roster.insert(record)
        _ = RosterView(roster, from: record.subject.count == 32 ? record.subject : FuzzKeys.staticKey.publicKey,
                       signingKey: record.subjectSigningKey.count == 32 ? record.subjectSigningKey : record.author)
    default:
        guard let records = try? RosterFile.decode(body) else { return }
        guard (try? RosterFile.decode(RosterFile.encode(records)))?.map(\.encoded) == records.map(\.encoded) else {
            fuzzFailure("a roster file that does not save and load back the same")
        }
    }
}

