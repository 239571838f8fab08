import CSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One SQLite connection with a prepared-statement cache: the only code that sees SQLite.
///
/// Not thread-safe: ``DeliveryStore`` uses it under its lock. Every SQLite return code passes
/// through ``check(_:_:)``, which turns it into a ``StoreError`` naming the operation and file.
final class SQLiteConnection {
    /// The database file.
    let path: String
    /// The configured file-size ceiling, used to name the limit of an SQLITE_FULL.
    var maxDatabaseBytes: Int?
    private var handle: OpaquePointer?
    private var cache: [StatementKey: SQLiteStatement] = [:]

    /// Opens (creating if missing, with mode 0600) the database at `path`.
    ///
    /// Nothing is read or written yet: SQLite reads the header lazily, so a damaged file is
    /// reported by the first statement, and an existing file is never truncated or recreated.
    init(path: String, busyTimeoutMilliseconds: Int) throws {
        self.path = path
        try Self.createFileIfMissing(path)
        try Self.checkAccess(path)
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw Self.error(rc: rc, message: message, operation: "open database", path: path, maxDatabaseBytes: nil)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        try check(sqlite3_busy_timeout(db, Int32(clamping: busyTimeoutMilliseconds)), "set busy timeout")
    }

    deinit { close() }

    /// Finalizes every cached statement and closes the connection. Idempotent.
    func close() {
        for statement in cache.values { statement.finalize() }
        cache.removeAll()
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Whether ``close()`` has run.
    var isClosed: Bool { handle == nil }

    /// Frees the page cache's pages not in use now (`sqlite3_db_release_memory`).
    func releaseMemory() {
        if let handle { sqlite3_db_release_memory(handle) }
    }

    /// Bytes of heap the page cache holds now (`SQLITE_DBSTATUS_CACHE_USED`).
    var pageCacheBytes: Int {
        guard let handle else { return 0 }
        var current: Int32 = 0, highest: Int32 = 0
        sqlite3_db_status(handle, SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0)
        return Int(current)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    /// The row id of the last successful INSERT.
    var lastInsertRowID: Int64 { handle.map { sqlite3_last_insert_rowid($0) } ?? 0 }

    /// Runs one or more statements without results (schema, pragmas that return nothing).
    func execute(_ sql: String, _ operation: String) throws {
        let db = try liveHandle(operation)
        try check(sqlite3_exec(db, sql, nil, nil, nil), operation)
    }

    /// Runs a cached statement to completion, ignoring rows.
    func run(_ sql: String, _ values: [SQLiteValue] = [], _ operation: String) throws {
        let statement = try prepared(sql, operation)
        defer { statement.reset() }
        try statement.bind(values, operation: operation)
        while try statement.step(operation: operation) {}
    }

    /// Runs a cached statement and maps each row.
    func query<T>(_ sql: String, _ values: [SQLiteValue] = [], _ operation: String,
                  row: (SQLiteStatement) throws -> T) throws -> [T] {
        let statement = try prepared(sql, operation)
        defer { statement.reset() }
        try statement.bind(values, operation: operation)
        var rows: [T] = []
        while try statement.step(operation: operation) { rows.append(try row(statement)) }
        return rows
    }

    /// The first row of a cached statement, mapped, or `nil`.
    func first<T>(_ sql: String, _ values: [SQLiteValue] = [], _ operation: String,
                  row: (SQLiteStatement) throws -> T) throws -> T? {
        let statement = try prepared(sql, operation)
        defer { statement.reset() }
        try statement.bind(values, operation: operation)
        return try statement.step(operation: operation) ? row(statement) : nil
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction: committed when it returns (one fsync in
    /// WAL mode with synchronous=FULL), rolled back when it throws or the commit fails.
    func transaction<T>(_ operation: String, _ body: () throws -> T) throws -> T {
        try run("BEGIN IMMEDIATE", [], operation)
        do {
            let result = try body()
            try run("COMMIT", [], operation)
            return result
        } catch {
            if let handle, sqlite3_get_autocommit(handle) == 0 {
                sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            }
            throw error
        }
    }

    /// Throws the ``StoreError`` for `rc` unless it is a success code.
    func check(_ rc: Int32, _ operation: String) throws {
        if rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE { return }
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
        throw Self.error(rc: rc, message: message, operation: operation, path: path, maxDatabaseBytes: maxDatabaseBytes)
    }

    /// Sets the database file and its `-wal`/`-shm` companions to mode 0600 when they exist.
    func restrictFileModes() throws {
        for file in [path, path + "-wal", path + "-shm"] where access(file, F_OK) == 0 {
            if chmod(file, 0o600) != 0 {
                throw StoreError(code: .cannotOpen, operation: "set file mode 0600", path: file,
                                 detail: String(cString: strerror(errno)))
            }
        }
    }

    private func liveHandle(_ operation: String) throws -> OpaquePointer {
        guard let handle else {
            throw StoreError(code: .closed, operation: operation, path: path, detail: "the store is closed")
        }
        return handle
    }

    private func prepared(_ sql: String, _ operation: String) throws -> SQLiteStatement {
        if let statement = cache[StatementKey(sql: sql)] { return statement }
        let db = try liveHandle(operation)
        var raw: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        try check(rc, operation)
        guard let raw else {
            throw StoreError(code: .internalError, operation: operation, path: path, detail: "empty statement: \(sql)")
        }
        let statement = SQLiteStatement(handle: raw, connection: self, sql: sql)
        cache[StatementKey(sql: sql)] = statement
        return statement
    }

    /// The database and its WAL files must be readable and writable by this user: SQLite says
    /// only "unable to open database file" when one belongs to another (meshd once run with
    /// sudo on this state folder), so say so here, naming the file's owner and mode.
    private static func checkAccess(_ path: String) throws {
        for file in [path, path + "-wal", path + "-shm"] {
            var info = stat()
            guard stat(file, &info) == 0, access(file, R_OK | W_OK) != 0, errno == EACCES else { continue }
            throw StoreError(code: .cannotOpen, operation: "open database", path: path,
                             detail: "permission denied: this user (uid \(getuid())) may not read and write \(file == path ? "it" : file) "
                                 + "(owner uid \(info.st_uid), mode \(String(info.st_mode & 0o777, radix: 8))); was meshd run as another user on this state folder?")
        }
    }

    /// Creates an empty file with mode 0600 so SQLite (and its -wal/-shm files, which copy the
    /// main file's mode) never exist with wider permissions, and fsyncs the folder so the new
    /// name survives a power loss. An existing file is not touched.
    private static func createFileIfMissing(_ path: String) throws {
        let fd = posixOpen(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0 && errno == EEXIST { return }
        guard fd >= 0 else {
            throw StoreError(code: .cannotOpen, operation: "create database file", path: path,
                             detail: String(cString: strerror(errno)))
        }
        _ = posixClose(fd)
        let folder = path.lastIndex(of: "/").map { String(path[..<$0]) }.map { $0.isEmpty ? "/" : $0 } ?? "."
        let folderFD = posixOpen(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        if folderFD >= 0 {
            _ = fsync(folderFD)
            _ = posixClose(folderFD)
        }
    }

    private static func error(rc: Int32, message: String, operation: String, path: String,
                              maxDatabaseBytes: Int?) -> StoreError {
        let code: StoreError.Code
        var limit: StoreLimit?
        switch rc & 0xFF {
        case SQLITE_FULL:
            code = .full
            limit = maxDatabaseBytes.map { .databaseSize($0) } ?? .disk
        case SQLITE_CORRUPT, SQLITE_NOTADB: code = .corrupt
        case SQLITE_BUSY, SQLITE_LOCKED: code = .busy
        case SQLITE_IOERR: code = .io
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY, SQLITE_AUTH: code = .cannotOpen
        case SQLITE_RANGE, SQLITE_TOOBIG, SQLITE_MISMATCH: code = .invalidArgument
        default: code = .internalError
        }
        return StoreError(code: code, operation: operation, path: path, limit: limit,
                          detail: "\(message) (SQLite code \(rc))")
    }
}

/// A statement cache key that hashes the text's length and its last 32 bytes only. Every store
/// call looks its statement up here, and SipHash over all of a 150-byte INSERT cost more than
/// the rest of the lookup (≈ 1 000 instructions per statement, 3 % of a reliable message).
/// Equality still compares the whole text: statements alike in those bytes only share a bucket.
private struct StatementKey: Hashable {
    let sql: String

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.sql == rhs.sql }

    func hash(into hasher: inout Hasher) {
        var text = sql    // `withUTF8` may make a bridged string contiguous; a native one is already
        text.withUTF8 { bytes in
            hasher.combine(bytes.count)
            hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.suffix(32))))
        }
    }
}

// File-scope aliases: inside the class, `open`/`close` would name the class's own members.
private func posixOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func posixClose(_ fd: Int32) -> Int32 { close(fd) }
