import Foundation

/// A row of the session directory as daemons exchange it.
///
/// ```
/// sessionID 16 | feature str16 | owner str16 | status str16 | updatedAt i64 (µs since 1970) | revision u64
/// ```
struct DeliverySessionRecord: Sendable, Equatable {
    /// Owner and status: 1–256 UTF-8 bytes, as `session.announce` accepts them.
    static let textBytes = 1...256

    var sessionID: UUID
    var featureID: String
    var owner: String
    var status: String
    var updatedAtMicros: Int64
    var revision: UInt64

    func encode(into writer: inout WireWriter) {
        writer.uuid(sessionID)
        writer.string16(featureID)
        writer.string16(owner)
        writer.string16(status)
        writer.i64(updatedAtMicros)
        writer.u64(revision)
    }

    init(sessionID: UUID, featureID: String, owner: String, status: String, updatedAtMicros: Int64, revision: UInt64) {
        self.sessionID = sessionID
        self.featureID = featureID
        self.owner = owner
        self.status = status
        self.updatedAtMicros = updatedAtMicros
        self.revision = revision
    }

    init(reading reader: inout WireReader) throws(WireFormatError) {
        sessionID = try reader.uuid("session id")
        featureID = try reader.featureID("session feature")
        owner = try reader.string16("session owner", bytes: Self.textBytes)
        status = try reader.string16("session status", bytes: Self.textBytes)
        updatedAtMicros = try reader.i64("session time")
        revision = try reader.u64("session revision")
    }

    init(_ record: SessionRecord) {
        self.init(sessionID: record.sessionID, featureID: record.featureID, owner: record.owner, status: record.status,
                  updatedAtMicros: DeliveryAnchorRecord.micros(record.updatedAt), revision: record.revision)
    }

    func record(sourcePeer: String?, handedOver: Bool = false) -> SessionRecord {
        SessionRecord(sessionID: sessionID, featureID: featureID, owner: owner, status: status,
                      updatedAt: DeliveryAnchorRecord.date(updatedAtMicros), revision: revision, sourcePeer: sourcePeer,
                      handedOver: handedOver)
    }
}
