import CSQLite

/// A prepared statement owned by a ``SQLiteConnection``'s cache.
///
/// Not thread-safe: used only under the owning store's lock. Every return code is checked
/// through the connection; no pointer or code leaves this file.
final class SQLiteStatement {
    private let handle: OpaquePointer
    private unowned let connection: SQLiteConnection
    /// The SQL text, for error messages.
    let sql: String

    init(handle: OpaquePointer, connection: SQLiteConnection, sql: String) {
        self.handle = handle
        self.connection = connection
        self.sql = sql
    }

    /// Frees the statement; called by the connection before it closes.
    func finalize() { sqlite3_finalize(handle) }

    /// Binds `values` to parameters 1…n.
    func bind(_ values: [SQLiteValue], operation: String) throws {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
            case .real(let v): rc = sqlite3_bind_double(handle, index, v)
            case .text(let v):
                // The explicit byte count keeps a NUL inside the text (valid UTF-8 an app may send in
                // a feature ID); -1 would cut the text there and file the row under another name.
                rc = v.withCString { sqlite3_bind_text(handle, index, $0, Int32(clamping: v.utf8.count), csqlite_transient()) }
            case .null: rc = sqlite3_bind_null(handle, index)
            case .blob(let bytes):
                if bytes.isEmpty {
                    // A nil pointer would bind NULL; an empty blob must stay an empty blob.
                    rc = sqlite3_bind_zeroblob(handle, index, 0)
                } else {
                    rc = bytes.withUnsafeBytes {
                        sqlite3_bind_blob(handle, index, $0.baseAddress, Int32($0.count), csqlite_transient())
                    }
                }
            }
            try connection.check(rc, operation)
        }
    }

    /// Advances: `true` when a row is available, `false` when the statement is done.
    func step(operation: String) throws -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        try connection.check(rc, operation)
        return false
    }

    /// Makes the statement reusable and drops its bindings.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Whether column `index` of the current row is NULL.
    func isNull(_ index: Int32) -> Bool { sqlite3_column_type(handle, index) == SQLITE_NULL }

    /// Column `index` as an integer (0 for NULL).
    func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

    /// Column `index` as a double (0 for NULL).
    func double(_ index: Int32) -> Double { sqlite3_column_double(handle, index) }

    /// Column `index` as UTF-8 text ("" for NULL).
    func text(_ index: Int32) -> String {
        guard let base = sqlite3_column_text(handle, index) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self)
    }

    /// Column `index` as bytes ([] for NULL or an empty blob).
    func blob(_ index: Int32) -> [UInt8] {
        guard let base = sqlite3_column_blob(handle, index) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, index))
        return Array(UnsafeRawBufferPointer(start: base, count: count))
    }
}
