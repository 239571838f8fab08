import Foundation
@testable import MeshDaemon

/// A fresh folder for one test's database files, removed by `cleanUp()`.
struct StoreTestDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("mesh-store-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// Path of a database file in the folder.
    func path(_ name: String = "store.sqlite") -> String { url.appendingPathComponent(name).path }

    func cleanUp() { try? FileManager.default.removeItem(at: url) }

    /// Runs `statements` on the database file (`path()`) behind the store's back (a file altered by
    /// something else), through a connection of its own.
    func alter(_ statements: [(sql: String, values: [SQLiteValue])]) throws {
        try alterStoreFile(path(), statements)
    }
}

/// Runs `statements` on the database file at `path` behind the store's back (a file altered by
/// something else, a trigger that makes writes fail), through a connection of its own.
func alterStoreFile(_ path: String, _ statements: [(sql: String, values: [SQLiteValue])]) throws {
    let raw = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 5_000)
    defer { raw.close() }
    for statement in statements { try raw.run(statement.sql, statement.values, "test setup") }
}

/// A fixed instant, so tests never read the wall clock.
let storeTestEpoch = Date(timeIntervalSince1970: 1_800_000_000)

/// An outbox item whose payload encodes `index`.
func makeOutboxItem(_ index: Int, feature: String = "demo", size: Int = 8, session: UUID? = nil) -> OutboxItem {
    var payload = withUnsafeBytes(of: UInt64(index).bigEndian) { Array($0) }
    if size > payload.count { payload += [UInt8](repeating: 0xAB, count: size - payload.count) }
    return OutboxItem(eventID: UUID(), featureID: feature, sessionID: session, kind: 1, payload: payload,
                      createdAt: storeTestEpoch.addingTimeInterval(Double(index)))
}

/// The index stored in the first 8 payload bytes by `makeOutboxItem`.
func payloadIndex(_ payload: [UInt8]) -> Int {
    payload.prefix(8).reduce(0) { $0 << 8 | Int($1) }
}

/// An inbox item with a fresh event ID.
func makeInboxItem(_ index: Int, feature: String = "demo", eventID: UUID = UUID()) -> InboxItem {
    InboxItem(eventID: eventID, featureID: feature, kind: 2, senderSequence: UInt64(index),
              payload: withUnsafeBytes(of: UInt64(index).bigEndian) { Array($0) })
}


extension DeliveryStore {
    /// The `EXPLAIN QUERY PLAN` details of each statement (to check a read uses an index).
    func queryPlans(_ statements: [String]) throws -> [[String]] {
        try withConnection { db in
            try statements.map { sql in try db.query("EXPLAIN QUERY PLAN " + sql, [], "explain a query") { $0.text(3) } }
        }
    }
}

/// Brings a current store file back to the tables of schema version 5 (empty where version 6
/// changed them, and without version 7's `owner_uid` columns) and marks it version 5, so a test
/// can write rows of that version and migrate them.
func undoSchemaVersion6(_ raw: SQLiteConnection) throws {
    try raw.execute("""
        ALTER TABLE outbox DROP COLUMN owner_uid;
        ALTER TABLE outbound_slot DROP COLUMN owner_uid;
        DROP INDEX inbound_slot_by_key;
        DROP INDEX outbound_slot_by_session;
        DROP TABLE session_directory;
        CREATE TABLE session_directory (
            session_id BLOB PRIMARY KEY NOT NULL, feature TEXT NOT NULL, owner TEXT NOT NULL, status TEXT NOT NULL,
            updated_at REAL NOT NULL, revision INTEGER NOT NULL, source_peer TEXT
        ) WITHOUT ROWID;
        CREATE INDEX session_by_feature ON session_directory (feature);
        DROP TABLE timer_anchor;
        CREATE TABLE timer_anchor (
            session_id BLOB PRIMARY KEY NOT NULL, revision INTEGER NOT NULL, bytes BLOB NOT NULL, updated_at REAL NOT NULL
        ) WITHOUT ROWID;
        DROP TABLE watermark;
        CREATE TABLE watermark (
            peer TEXT NOT NULL, session BLOB NOT NULL, direction INTEGER NOT NULL, feature TEXT NOT NULL,
            sequence INTEGER NOT NULL, updated_at REAL NOT NULL, PRIMARY KEY (peer, session, direction)
        ) WITHOUT ROWID;
        PRAGMA user_version = 5;
        """, "test setup: schema version 5")
}
