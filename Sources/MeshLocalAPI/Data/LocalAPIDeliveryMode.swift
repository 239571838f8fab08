import SessionMesh

/// The `mode u8` of `send` requests and `envelope` events.
///
/// | byte | mode |
/// |---|---|
/// | 1 | `realtimeBestEffort` |
/// | 2 | `reliableEventually` |
/// | 3 | `snapshotRequest` (reserved: use the `snapshot.request` operation) |
/// | 4 | `latestSnapshot` (reserved: use `snapshot.publish`) |
/// | 5 | `acknowledgement` |
///
/// Any other byte is rejected with `bad-request`.
public enum LocalAPIDeliveryMode {
    /// The wire byte of `mode`.
    public static func byte(_ mode: SessionDeliveryMode) -> UInt8 {
        switch mode {
        case .realtimeBestEffort: 1
        case .reliableEventually: 2
        case .snapshotRequest: 3
        case .latestSnapshot: 4
        case .acknowledgement: 5
        }
    }

    /// The mode a wire byte names, or nil for an unknown byte.
    public static func mode(_ byte: UInt8) -> SessionDeliveryMode? {
        switch byte {
        case 1: .realtimeBestEffort
        case 2: .reliableEventually
        case 3: .snapshotRequest
        case 4: .latestSnapshot
        case 5: .acknowledgement
        default: nil
        }
    }

    /// Reads a mode byte strictly.
    static func read(_ reader: inout LocalAPIBinaryReader) throws(LocalAPIErrorBody) -> SessionDeliveryMode {
        let raw = try reader.u8("mode")
        guard let mode = mode(raw) else {
            throw LocalAPIDataError.badRequest(reader.operation, "unknown delivery mode \(raw) (1 realtime, 2 reliable, 5 acknowledgement)")
        }
        return mode
    }
}
