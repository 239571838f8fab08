/// Facts about the on-wire protocol that every peer must agree on.
public enum SessionSyncProtocol {
    /// The protocol version this build speaks and accepts: `1`.
    ///
    /// Every ``SessionSyncMetadata`` and ``SessionSnapshotRequest`` carries it; the engine rejects
    /// anything else with ``SessionSyncError/protocolVersionMismatch(expected:received:)``.
    public static let currentVersion: Int = 1
}
