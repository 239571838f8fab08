import Foundation

/// Conversions between the store's Swift values and its SQLite columns.
///
/// UUIDs are 16-byte blobs; times are REAL seconds since 1970; revisions and sequences are
/// INTEGER (so at most Int64.max); a missing session in a slot key is the empty blob.
enum StoreColumns {
    static func blob(_ uuid: UUID) -> [UInt8] { withUnsafeBytes(of: uuid.uuid) { Array($0) } }

    static func value(_ uuid: UUID?) -> SQLiteValue { uuid.map { .blob(blob($0)) } ?? .null }

    /// Slot keys cannot be NULL (NULLs are distinct in a primary key), so "no session" is x''.
    static func slotKey(_ uuid: UUID?) -> SQLiteValue { .blob(uuid.map(blob) ?? []) }

    static func value(_ date: Date) -> SQLiteValue { .real(date.timeIntervalSince1970) }

    static func value(_ date: Date?) -> SQLiteValue { date.map(value) ?? .null }

    static func date(_ statement: SQLiteStatement, _ index: Int32) -> Date {
        Date(timeIntervalSince1970: statement.double(index))
    }

    static func optionalDate(_ statement: SQLiteStatement, _ index: Int32) -> Date? {
        statement.isNull(index) ? nil : date(statement, index)
    }

    /// An outbox row's `owner_uid`: nil when NULL or not a uid (an altered file), a row of no uid.
    static func ownerUID(_ statement: SQLiteStatement, _ index: Int32) -> UInt32? {
        statement.isNull(index) ? nil : UInt32(exactly: statement.int64(index))
    }

    /// `uid` as a column value (NULL for none).
    static func value(ownerUID uid: UInt32?) -> SQLiteValue {
        uid.map { .integer(Int64($0)) } ?? .null
    }

    /// Stands in for an event or session ID damaged in the file where a row is still handed out
    /// or listed (inbox replays, `meshctl queue`): the all-zero UUID, which `UUID()` never makes
    /// (version 4 sets bits).
    static let damagedID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    /// The 16-byte ID in column `index`, or nil for any other value (a damaged row).
    static func validUUID(_ statement: SQLiteStatement, _ index: Int32) -> UUID? {
        uuid(statement.blob(index))
    }

    /// A nullable ID column (a session; NULL or the empty blob mean none), read once and
    /// without throwing.
    enum OptionalID {
        case none
        case id(UUID)
        /// Neither empty nor 16 bytes: altered behind our back.
        case damaged

        /// The ID; nil for none and for a damaged one.
        var id: UUID? { if case .id(let id) = self { id } else { nil } }
        /// The ID, ``StoreColumns/damagedID`` in place of a damaged one, nil for none.
        var idOrStandIn: UUID? { if case .damaged = self { StoreColumns.damagedID } else { id } }
        var isDamaged: Bool { if case .damaged = self { true } else { false } }
    }

    static func optionalID(_ statement: SQLiteStatement, _ index: Int32) -> OptionalID {
        let bytes = statement.blob(index)
        if bytes.isEmpty { return .none }
        return uuid(bytes).map { .id($0) } ?? .damaged
    }

    private static func uuid(_ bytes: [UInt8]) -> UUID? {
        guard bytes.count == 16 else { return nil }
        return bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }

    /// A revision or sequence as INTEGER; values above Int64.max are refused.
    static func integer(_ value: UInt64, name: String, operation: String, path: String) throws -> SQLiteValue {
        guard let signed = Int64(exactly: value) else {
            throw StoreError(code: .invalidArgument, operation: operation, path: path,
                             detail: "\(name) \(value) is above the largest storable value \(Int64.max)")
        }
        return .integer(signed)
    }

    static func unsigned(_ statement: SQLiteStatement, _ index: Int32) -> UInt64 {
        UInt64(clamping: statement.int64(index))
    }
}
