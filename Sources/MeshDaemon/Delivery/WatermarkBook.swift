import Foundation

/// The watermarks exchanged with one peer (docs/DELIVERY.md, "Presence and watermarks"): the
/// ones this device's apps set for the peer's events (`sent`) and the ones the peer reported
/// for this device's events (`received`), by (feature, session): a watermark of one feature
/// never raises or hides another feature's watermark of the same session ID. Both only ever rise.
///
/// The router keeps one per peer and does the I/O: a raise it is told about is to be stored,
/// and sent (a `sent` one, when the channel is up) or emitted to the apps (a `received` one).
struct WatermarkBook: Sendable, Equatable {
    struct Mark: Sendable, Equatable {
        var featureID: String
        var sequence: UInt64
    }

    /// What a watermark belongs to.
    struct Key: Sendable, Hashable, Comparable {
        var featureID: String
        var sessionID: UUID

        static func < (lhs: Key, rhs: Key) -> Bool {
            (lhs.featureID, lhs.sessionID.uuidString) < (rhs.featureID, rhs.sessionID.uuidString)
        }
    }

    /// Watermarks this device's apps set for the peer's events, by (feature, session).
    private(set) var sent: [Key: Mark] = [:]
    /// Watermarks the peer reported for this device's events, by (feature, session).
    private(set) var received: [Key: Mark] = [:]

    /// What a watermark the peer reported does.
    enum Received: Equatable {
        /// Higher than the known one (or the first of its session): store it and emit it.
        case raised
        /// Not higher than the known one: nothing.
        case stale
        /// A new session beyond the per-peer bound: refused (a peer fault).
        case refused
    }

    /// An app here processed the peer's events of `sessionID` up to `sequence`. True when that
    /// raised the watermark (store it; send it when the channel is up).
    mutating func set(sessionID: UUID, featureID: String, sequence: UInt64) -> Bool {
        let key = Key(featureID: featureID, sessionID: sessionID)
        if let known = sent[key], known.sequence >= sequence { return false }
        sent[key] = Mark(featureID: featureID, sequence: sequence)
        return true
    }

    /// The peer reported a watermark. At most `maximumSessions` sessions are kept per peer.
    mutating func received(sessionID: UUID, featureID: String, sequence: UInt64, maximumSessions: Int) -> Received {
        let key = Key(featureID: featureID, sessionID: sessionID)
        if let known = received[key] {
            guard known.sequence < sequence else { return .stale }
        } else if received.count >= maximumSessions {
            return .refused
        }
        received[key] = Mark(featureID: featureID, sequence: sequence)
        return .raised
    }

    /// Merges a stored watermark (at load): only ever raises a known one.
    mutating func merge(_ record: WatermarkRecord) {
        let mark = Mark(featureID: record.featureID, sequence: record.sequence)
        let key = Key(featureID: record.featureID, sessionID: record.sessionID)
        switch record.direction {
        case .sent:
            if (sent[key]?.sequence ?? 0) < record.sequence { sent[key] = mark }
        case .received:
            if (received[key]?.sequence ?? 0) < record.sequence { received[key] = mark }
        }
    }

    /// The watermarks this device's apps set, as the messages that resend them to the peer, by
    /// feature then session ID text (not in the dictionary's hash order).
    var sentMessages: [DeliveryMessage] {
        sent.sorted { $0.key < $1.key }
            .map { .watermark(sessionID: $0.key.sessionID, featureID: $0.value.featureID, sequence: $0.value.sequence) }
    }

    /// The peer's reported watermarks of `features` (and of `sessionID` when given), by feature
    /// then session ID text.
    func current(features: Set<String>, sessionID: UUID?) -> [(sessionID: UUID, mark: Mark)] {
        received.sorted { $0.key < $1.key }
            .filter { features.contains($0.key.featureID) && (sessionID == nil || sessionID == $0.key.sessionID) }
            .map { (sessionID: $0.key.sessionID, mark: $0.value) }
    }
}
