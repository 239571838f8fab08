import Foundation
import MeshCrypto

/// The name a mailbox ack box gives a latest-state snapshot it acknowledges: 16 bytes, like an
/// item's event ID, so one ack box names items and snapshots alike (docs/PROTOCOL.md §11,
/// "Mailbox plaintexts and the session").
///
/// ```
/// ackID = SHA-256( "SessionMesh mailbox snapshot ack v1"   (35 ASCII bytes)
///                 || feature length u16 BE || feature (UTF-8, 1–255 bytes)
///                 || sessionID (16)
///                 || revision u64 BE )[0..<16]
/// ```
/// Both sides compute it from the slot's key and revision: the sender from its outbound slot,
/// the receiver from the snapshot it opened. It names a revision, so an ack of an older one
/// never counts for a newer one.
enum MailboxSnapshotAckID {
    static let label = Array("SessionMesh mailbox snapshot ack v1".utf8)

    /// The ack ID of revision `revision` of the slot (`featureID`, `sessionID`).
    static func of(featureID: String, sessionID: UUID, revision: UInt64) -> UUID {
        var writer = WireWriter(capacity: label.count + 2 + featureID.utf8.count + 16 + 8)
        writer.raw(label)
        writer.string16(featureID)
        writer.uuid(sessionID)
        writer.u64(revision)
        let digest = PairingSupport.sha256(writer.bytes)
        return UUID(uuid: (digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6], digest[7],
                           digest[8], digest[9], digest[10], digest[11], digest[12], digest[13], digest[14], digest[15]))
    }
}
