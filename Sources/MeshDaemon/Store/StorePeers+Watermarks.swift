import Foundation

/// Delivery watermarks (docs/DELIVERY.md, "Presence and watermarks"): one row per (peer, feature, session, direction), only ever raised.
extension StorePeers {
    /// Stores a watermark. Returns `true` when it was new or higher than the stored one; a
    /// lower or equal value leaves the row as it is. Sequences above `Int64.max` are refused
    /// with `StoreError` code `.invalidArgument`.
    @discardableResult
    public func putWatermark(_ record: WatermarkRecord) throws -> Bool {
        try store.withConnection { db in
            let operation = "store watermark of session \(record.sessionID)"
            try db.run("""
                INSERT INTO watermark (peer, session, direction, feature, sequence, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (peer, feature, session, direction) DO UPDATE
                SET sequence = excluded.sequence, updated_at = excluded.updated_at
                WHERE excluded.sequence > watermark.sequence
                """, [.text(record.peer), .blob(StoreColumns.blob(record.sessionID)), .integer(record.direction.rawValue),
                      .text(record.featureID),
                      try StoreColumns.integer(record.sequence, name: "sequence", operation: operation, path: store.path),
                      StoreColumns.value(record.updatedAt)], operation)
            return db.changes > 0
        }
    }

    /// Every stored watermark (read once when the router starts).
    public func watermarks() throws -> [WatermarkRecord] {
        try store.withConnection { db in
            try db.query("SELECT peer, session, direction, feature, sequence, updated_at FROM watermark ORDER BY peer, feature, session",
                         [], "read watermarks") { row -> WatermarkRecord? in
                // A row whose key was damaged in the file cannot be addressed: left out (the
                // next watermark of that session writes a good row).
                guard let sessionID = StoreColumns.validUUID(row, 1) else { return nil }
                return WatermarkRecord(peer: row.text(0), sessionID: sessionID,
                                       direction: WatermarkRecord.Direction(rawValue: row.int64(2)) ?? .received,
                                       featureID: row.text(3), sequence: StoreColumns.unsigned(row, 4),
                                       updatedAt: StoreColumns.date(row, 5))
            }.compactMap { $0 }
        }
    }
}
