/// The versioned schema of the delivery store: one migration per version, applied in order.
///
/// `PRAGMA user_version` holds the version, `PRAGMA application_id` marks the file as ours.
/// Never edit a shipped migration; append a new one. docs/STORE.md describes every table.
enum StoreSchema {
    /// `SMSH`: distinguishes a SessionMesh store from any other SQLite file.
    static let applicationID: Int64 = 0x534D_5348

    /// Migration `i` brings the file from version `i` to `i + 1`.
    static let migrations: [String] = [
        // Version 1.
        """
        CREATE TABLE outbox_peer (
            peer TEXT PRIMARY KEY NOT NULL,
            last_sequence INTEGER NOT NULL
        );
        CREATE TABLE outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            peer TEXT NOT NULL,
            sequence INTEGER NOT NULL,
            event_id BLOB NOT NULL,
            feature TEXT NOT NULL,
            session BLOB,
            kind INTEGER NOT NULL,
            payload BLOB NOT NULL,
            created_at REAL NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_attempt_at REAL,
            UNIQUE (peer, sequence),
            UNIQUE (peer, event_id)
        );
        CREATE TABLE inbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            peer TEXT NOT NULL,
            event_id BLOB NOT NULL UNIQUE,
            feature TEXT NOT NULL,
            session BLOB,
            kind INTEGER NOT NULL,
            sender_sequence INTEGER NOT NULL,
            payload BLOB NOT NULL,
            received_at REAL NOT NULL,
            delivery_count INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX inbox_by_feature ON inbox (feature, id);
        CREATE INDEX inbox_by_peer ON inbox (peer);
        CREATE TABLE inbox_seen (
            event_id BLOB NOT NULL UNIQUE,
            peer TEXT NOT NULL
        );
        CREATE INDEX inbox_seen_by_peer ON inbox_seen (peer);
        CREATE TABLE outbound_slot (
            feature TEXT NOT NULL,
            session BLOB NOT NULL,
            revision INTEGER NOT NULL,
            bytes BLOB NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (feature, session)
        ) WITHOUT ROWID;
        CREATE TABLE inbound_slot (
            peer TEXT NOT NULL,
            feature TEXT NOT NULL,
            session BLOB NOT NULL,
            revision INTEGER NOT NULL,
            bytes BLOB NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (peer, feature, session)
        ) WITHOUT ROWID;
        CREATE TABLE session_directory (
            session_id BLOB PRIMARY KEY NOT NULL,
            feature TEXT NOT NULL,
            owner TEXT NOT NULL,
            status TEXT NOT NULL,
            updated_at REAL NOT NULL,
            revision INTEGER NOT NULL,
            source_peer TEXT
        ) WITHOUT ROWID;
        CREATE INDEX session_by_feature ON session_directory (feature);
        CREATE TABLE timer_anchor (
            session_id BLOB PRIMARY KEY NOT NULL,
            revision INTEGER NOT NULL,
            bytes BLOB NOT NULL,
            updated_at REAL NOT NULL
        ) WITHOUT ROWID;
        """,
        // Version 2: delivery watermarks survive restarts (direction 0 sent, 1 received).
        """
        CREATE TABLE watermark (
            peer TEXT NOT NULL,
            session BLOB NOT NULL,
            direction INTEGER NOT NULL,
            feature TEXT NOT NULL,
            sequence INTEGER NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (peer, session, direction)
        ) WITHOUT ROWID;
        """,
        // Version 3: realtime event IDs delivered live, one appended row per flush (16 bytes per
        // ID, in order) instead of one `inbox_seen` row and two index entries per ID.
        """
        CREATE TABLE seen_batch (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            peer TEXT NOT NULL,
            event_ids BLOB NOT NULL
        );
        CREATE INDEX seen_batch_by_peer ON seen_batch (peer, id);
        """,
        // Version 4: event IDs of inbox items an app acknowledged, one appended row per
        // transaction as in `seen_batch`, instead of one `inbox_seen` row and two index entries
        // per received item (the inbox's own unique index covers items not yet acknowledged).
        // `StoreOpener` moves the rows left in `inbox_seen` over; the table stays, empty.
        """
        CREATE TABLE acked_batch (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            peer TEXT NOT NULL,
            event_ids BLOB NOT NULL
        );
        CREATE INDEX acked_batch_by_peer ON acked_batch (peer, id);
        """,
        // Version 5: no index of the inbox by peer. Only an unpair (`StorePeers.drop`) looks the inbox
        // up by peer, and a scan of the bounded inbox serves it; every received item paid for
        // the index twice, at its insert and at its delete (≈ 10 % of the receiver's CPU per
        // reliable item).
        """
        DROP INDEX IF EXISTS inbox_by_peer;
        """,
        // Version 6: sessions, timer anchors and watermarks are keyed by (feature, session), so
        // naming a session ID never reaches another feature's row; a timer anchor is kept per
        // sender (`source_peer`, '' for this device), so a peer's anchor never replaces this
        // device's or another peer's. Keyed reads of the snapshot slots get their indexes.
        // `StoreOpener` moves the old `timer_anchor` rows into `timer_anchor_keyed` (the feature
        // is inside each row's encoded record) and renames it.
        """
        CREATE TABLE session_directory_keyed (
            feature TEXT NOT NULL,
            session_id BLOB NOT NULL,
            owner TEXT NOT NULL,
            status TEXT NOT NULL,
            updated_at REAL NOT NULL,
            revision INTEGER NOT NULL,
            source_peer TEXT,
            PRIMARY KEY (feature, session_id)
        ) WITHOUT ROWID;
        INSERT INTO session_directory_keyed (feature, session_id, owner, status, updated_at, revision, source_peer)
            SELECT feature, session_id, owner, status, updated_at, revision, source_peer FROM session_directory;
        DROP TABLE session_directory;
        ALTER TABLE session_directory_keyed RENAME TO session_directory;
        CREATE INDEX session_by_id ON session_directory (session_id);
        CREATE INDEX session_by_source ON session_directory (source_peer) WHERE source_peer IS NOT NULL;
        CREATE TABLE timer_anchor_keyed (
            feature TEXT NOT NULL,
            session_id BLOB NOT NULL,
            source_peer TEXT NOT NULL,
            revision INTEGER NOT NULL,
            bytes BLOB NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (feature, session_id, source_peer)
        ) WITHOUT ROWID;
        CREATE TABLE watermark_keyed (
            peer TEXT NOT NULL,
            feature TEXT NOT NULL,
            session BLOB NOT NULL,
            direction INTEGER NOT NULL,
            sequence INTEGER NOT NULL,
            updated_at REAL NOT NULL,
            PRIMARY KEY (peer, feature, session, direction)
        ) WITHOUT ROWID;
        INSERT INTO watermark_keyed (peer, feature, session, direction, sequence, updated_at)
            SELECT peer, feature, session, direction, sequence, updated_at FROM watermark;
        DROP TABLE watermark;
        ALTER TABLE watermark_keyed RENAME TO watermark;
        CREATE INDEX inbound_slot_by_key ON inbound_slot (feature, session, updated_at);
        CREATE INDEX outbound_slot_by_session ON outbound_slot (session, updated_at);
        """,
        // Version 7: the local uid that queued each outbox item and that created each outbound
        // snapshot slot, session row and timer anchor of this device (`owner_uid`), so one uid's
        // share of the outbox (`uid_max_outbox_*`), of the outbound slots (`uid_max_slots`,
        // `uid_max_slot_bytes`), of the session rows (`uid_max_sessions`) and of the anchors
        // (`uid_max_anchors`) is bounded. Rows of older files, rows of peers and rows the daemon
        // wrote itself or for a client of unknown uid keep NULL: they count toward no uid.
        """
        ALTER TABLE outbox ADD COLUMN owner_uid INTEGER;
        ALTER TABLE outbound_slot ADD COLUMN owner_uid INTEGER;
        ALTER TABLE session_directory ADD COLUMN owner_uid INTEGER;
        ALTER TABLE timer_anchor ADD COLUMN owner_uid INTEGER;
        """,
        // Version 8: a session row that changed hands by an owner hand-over (`handed_over` 1) is
        // passed on to the device set's members as a claim (docs/DEVICE-SET.md).
        """
        ALTER TABLE session_directory ADD COLUMN handed_over INTEGER NOT NULL DEFAULT 0;
        """,
    ]

    /// The statements that finish version 6 after `StoreOpener` moved the anchors.
    static let anchorTableSwap = """
        DROP TABLE timer_anchor;
        ALTER TABLE timer_anchor_keyed RENAME TO timer_anchor;
        CREATE INDEX timer_anchor_by_id ON timer_anchor (session_id);
        CREATE INDEX timer_anchor_by_source ON timer_anchor (source_peer);
        """

    /// The version a fully migrated file has.
    static var currentVersion: Int64 { Int64(migrations.count) }
}
