/// The checks and settings applied when a store file is opened, in an order that never writes
/// to a file before it is known to be a healthy SessionMesh store.
struct StoreOpener {
    let connection: SQLiteConnection
    let options: DeliveryStoreOptions

    func prepare() throws {
        let db = connection
        // First read of page 1: a file that is not a database fails here with .corrupt.
        let applicationID = try db.first("PRAGMA application_id", [], "read database header") { $0.int64(0) } ?? 0
        try verify()
        let version = try db.first("PRAGMA user_version", [], "read schema version") { $0.int64(0) } ?? 0
        let tables = try db.first("SELECT COUNT(*) FROM sqlite_master", [], "read schema") { $0.int64(0) } ?? 0
        if applicationID != 0 && applicationID != StoreSchema.applicationID {
            throw incompatible("application id \(applicationID) is not SessionMesh's")
        }
        if applicationID == 0 && tables > 0 {
            throw incompatible("the file is a SQLite database of another program")
        }
        if version > StoreSchema.currentVersion {
            throw incompatible("schema version \(version) is newer than this build's \(StoreSchema.currentVersion)")
        }
        // Versions only ever rise from 0 together with the tables (one transaction), so these
        // mean the header was altered: refuse rather than run migrations over existing tables
        // (or index the migration list with a negative number).
        if version < 0 || (version == 0 && tables > 0) {
            throw incompatible("schema version \(version) does not match the file's tables; the file was altered")
        }

        let mode = try db.first("PRAGMA journal_mode = WAL", [], "enable WAL mode") { $0.text(0) }
        guard mode?.lowercased() == "wal" else {
            throw StoreError(code: .cannotOpen, operation: "enable WAL mode", path: db.path,
                             detail: "journal mode stayed \(mode ?? "unknown"); is the file system local?")
        }
        try db.execute("PRAGMA synchronous = \(options.synchronous == .full ? "FULL" : "NORMAL")", "set synchronous mode")
        // Event IDs are random UUIDs, so index inserts touch pages all over the file: a cache
        // larger than the 2 MiB default keeps them in memory (it grows only as it is used).
        try db.execute("PRAGMA cache_size = -16384", "set page cache size")
        // Bounds the WAL file left after a checkpoint. How often checkpoints run depends on the
        // room left on the disk (`StoreWALBound`).
        try db.execute("PRAGMA journal_size_limit = \(64 << 20)", "limit WAL size")
        if let maxBytes = options.maxDatabaseBytes {
            let pageSize = try db.first("PRAGMA page_size", [], "read page size") { $0.int64(0) } ?? 4096
            try db.execute("PRAGMA max_page_count = \(max(1, Int64(maxBytes) / max(pageSize, 512)))", "set size ceiling")
            db.maxDatabaseBytes = maxBytes
        }
        for target in version..<StoreSchema.currentVersion {
            try db.transaction("migrate schema to version \(target + 1)") {
                try db.execute(StoreSchema.migrations[Int(target)], "migrate schema to version \(target + 1)")
                try db.execute("PRAGMA user_version = \(target + 1)", "record schema version")
                try db.execute("PRAGMA application_id = \(StoreSchema.applicationID)", "mark file as SessionMesh store")
                if target + 1 == 4 { try moveInboxSeenRows() }
                if target + 1 == 6 { try moveTimerAnchorRows() }
            }
        }
        try repairOutboxSequences()
        try db.restrictFileModes()
    }

    /// Repairs what would break the per-peer outbox order, as found in the file:
    /// - rows whose sequence is not a positive integer would never be sent (the pump reads
    ///   `sequence > after`), and one below 1 would be deleted unsent by the next ack
    ///   (`sequence <= upTo`): they move to the end of their peer's queue, oldest row first;
    /// - a peer's counter (`outbox_peer.last_sequence`) damaged or below its highest queued
    ///   sequence would hand out a taken sequence, and every send to that peer would fail on
    ///   `UNIQUE (peer, sequence)`: it is raised.
    /// Reads one row per peer (and the damaged rows); writes only when something is wrong.
    private func repairOutboxSequences() throws {
        let db = connection, operation = "repair outbox sequences"
        var highest: [String: Int64] = [:], damagedCount = 0
        for (peer, high, damaged) in try db.query("""
            SELECT peer, COALESCE(MAX(CASE WHEN typeof(sequence) = 'integer' AND sequence >= 1 THEN sequence END), 0),
                   SUM(typeof(sequence) != 'integer' OR sequence < 1)
            FROM outbox GROUP BY peer
            """, [], operation, row: { ($0.text(0), $0.int64(1), Int($0.int64(2))) }) {
            highest[peer] = high
            damagedCount += damaged
        }
        let counters = Dictionary(try db.query("""
            SELECT peer, CASE WHEN typeof(last_sequence) = 'integer' THEN last_sequence ELSE 0 END FROM outbox_peer
            """, [], operation) { ($0.text(0), $0.int64(1)) }, uniquingKeysWith: max)
        // Where each peer's queue ends now; damaged rows go after it, oldest first.
        var last = highest.merging(counters, uniquingKeysWith: max)
        var moves: [(id: Int64, sequence: Int64)] = []
        if damagedCount > 0 {
            for (id, peer) in try db.query("""
                SELECT id, peer FROM outbox WHERE typeof(sequence) != 'integer' OR sequence < 1 ORDER BY id
                """, [], operation, row: { ($0.int64(0), $0.text(1)) }) {
                // A counter at the largest sequence (a damaged file) leaves no room: the row
                // stays as it is, and sends to that peer fail naming the counter (`StoreOutbox`).
                let (sequence, overflow) = (last[peer] ?? 0).addingReportingOverflow(1)
                guard !overflow else { continue }
                last[peer] = sequence
                moves.append((id, sequence))
            }
        }
        let raised = last.filter { (counters[$0.key] ?? -1) < $0.value }
        guard !moves.isEmpty || !raised.isEmpty else { return }
        try db.transaction(operation) {
            for move in moves {
                try db.run("UPDATE outbox SET sequence = ? WHERE id = ?", [.integer(move.sequence), .integer(move.id)], operation)
            }
            for (peer, value) in raised {
                try db.run("""
                    INSERT INTO outbox_peer (peer, last_sequence) VALUES (?, ?)
                    ON CONFLICT (peer) DO UPDATE SET last_sequence = excluded.last_sequence
                    """, [.text(peer), .integer(value)], operation)
            }
        }
    }

    /// Schema v4: the event IDs a file kept in `inbox_seen` (one row each, oldest first) become
    /// `acked_batch` rows of up to 4 096 IDs per peer, in the same order, inside the migration's
    /// transaction. A value that is not a 16-byte ID (never written by this code) is dropped.
    private func moveInboxSeenRows() throws {
        let db = connection
        let operation = "migrate schema to version 4"
        let rows = try db.query("SELECT peer, event_id FROM inbox_seen ORDER BY rowid", [], operation) {
            ($0.text(0), $0.blob(1))
        }
        guard !rows.isEmpty else { return }
        var order: [String] = []
        var byPeer: [String: [UInt8]] = [:]
        for (peer, id) in rows where id.count == 16 {
            if byPeer[peer] == nil { order.append(peer) }
            byPeer[peer, default: []].append(contentsOf: id)
        }
        let chunk = 4_096 * 16
        for peer in order {
            let bytes = byPeer[peer] ?? []
            for start in stride(from: 0, to: bytes.count, by: chunk) {
                let part = Array(bytes[start..<min(bytes.count, start + chunk)])
                try db.run("INSERT INTO acked_batch (peer, event_ids) VALUES (?, ?)", [.text(peer), .blob(part)], operation)
            }
        }
        try db.run("DELETE FROM inbox_seen", [], operation)
    }

    /// Schema v6: each `timer_anchor` row moves to `timer_anchor_keyed` under the feature its
    /// encoded record names ('' when the record does not decode: it was never resent anyway)
    /// and under the peer the session's directory row came from ('' — this device — when there
    /// is none), inside the migration's transaction.
    private func moveTimerAnchorRows() throws {
        let db = connection
        let operation = "migrate schema to version 6"
        let rows = try db.query("""
            SELECT session_id, revision, bytes, updated_at FROM timer_anchor ORDER BY session_id
            """, [], operation) { ($0.blob(0), $0.int64(1), $0.blob(2), $0.double(3)) }
        for (session, revision, bytes, updatedAt) in rows {
            let feature = (try? DeliveryAnchorRecord(stored: bytes))?.featureID ?? ""
            let source = try db.first("""
                SELECT source_peer FROM session_directory WHERE feature = ? AND session_id = ? AND source_peer IS NOT NULL
                """, [.text(feature), .blob(session)], operation) { $0.text(0) } ?? ""
            try db.run("""
                INSERT OR REPLACE INTO timer_anchor_keyed (feature, session_id, source_peer, revision, bytes, updated_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """, [.text(feature), .blob(session), .text(source), .integer(revision), .blob(bytes), .real(updatedAt)], operation)
        }
        try db.execute(StoreSchema.anchorTableSwap, operation)
    }

    private func verify() throws {
        let pragma: String
        switch options.verification {
        case .none: return
        case .quick: pragma = "PRAGMA quick_check(20)"
        case .full: pragma = "PRAGMA integrity_check(20)"
        }
        let problems = try connection.query(pragma, [], "check database integrity") { $0.text(0) }
        if problems != ["ok"] {
            throw StoreError(code: .corrupt, operation: "check database integrity", path: connection.path,
                             detail: "the database is damaged: " + problems.prefix(5).joined(separator: "; "))
        }
    }

    private func incompatible(_ detail: String) -> StoreError {
        StoreError(code: .incompatible, operation: "open database", path: connection.path, detail: detail)
    }
}
