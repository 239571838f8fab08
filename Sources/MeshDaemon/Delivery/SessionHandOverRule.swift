import Foundation

/// The rules of the session owner hand-over (docs/DEVICE-SET.md, "Session owner hand-over"),
/// with no state: who takes over a session whose owner is gone, and which of two claims on a
/// session wins. Device IDs are compared in their grouped text form, byte by byte, so that an
/// implementation in any language orders them alike.
enum SessionHandOverRule {
    /// The device that owns a stored row: the peer it came from, or this device for its own.
    static func holder(of row: SessionRecord, local: String) -> String { row.sourcePeer ?? local }

    /// Whether `a` orders before `b` (UTF-8 bytes, lexicographically).
    static func precedes(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    /// Whether `owner` owning the session at `revision` wins over `other` owning it at
    /// `otherRevision`: the higher revision, and at the same revision the lower device ID.
    static func wins(revision: UInt64, owner: String, over otherRevision: UInt64, _ other: String) -> Bool {
        revision > otherRevision || (revision == otherRevision && precedes(owner, other))
    }

    /// Who takes over a session whose owner is gone: the participant (a device with an app of
    /// the session's feature attached) with the lowest device ID; nil when there is none.
    static func successor(among participants: [String]) -> String? {
        participants.min(by: precedes)
    }

    /// What a receiver does with a claim over the row it stores.
    enum Decision: Equatable {
        /// The claim wins: it replaces the row (or is the first row of the session).
        case accept
        /// The stored row is as good or better; `reply`: strictly better, so the claimant is
        /// told of it (as a claim of the stored row's holder).
        case stale(reply: Bool)
        /// The session is closed here: a claim never revives it.
        case closed
    }

    /// The decision on `claim` (its `sourcePeer` is the claimed owner) over `existing`, on the
    /// device whose ID is `local`.
    static func decide(_ claim: SessionRecord, over existing: SessionRecord?, local: String) -> Decision {
        guard let existing else { return .accept }
        guard existing.status != "closed" else { return .closed }
        let holder = holder(of: existing, local: local), owner = claim.sourcePeer ?? local
        if wins(revision: claim.revision, owner: owner, over: existing.revision, holder) { return .accept }
        return .stale(reply: wins(revision: existing.revision, owner: holder, over: claim.revision, owner))
    }
}

/// A session of the directory: its feature and ID.
struct PendingHandOverKey: Hashable, Sendable {
    var featureID: String
    var sessionID: UUID
}
