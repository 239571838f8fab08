import NIOCore

/// Joiners waiting for an inviter that advertises their code's hint (pairing by code alone),
/// by search number: each ends when discovery shows a matching service it has not tried, at
/// its deadline, or when its request is cancelled. Bookkeeping only: `NodePairing` resumes what
/// it is handed.
struct InviterSearches {
    struct Search {
        let hint: String
        /// Instance names tried already: only another service ends the search.
        let excluded: Set<String>
        let continuation: CheckedContinuation<Void, Never>
        let deadline: Scheduled<Void>
    }

    private var searches: [UInt64: Search] = [:]
    private var next: UInt64 = 0

    /// A number for a new search (stored with `store(_:_:)` once its deadline is armed).
    mutating func reserve() -> UInt64 {
        defer { next &+= 1 }
        return next
    }

    mutating func store(_ id: UInt64, _ search: Search) { searches[id] = search }

    /// Ends search `id`: it, to resume (nil when it already ended).
    mutating func end(_ id: UInt64) -> Search? { searches.removeValue(forKey: id) }

    /// Ends the searches whose hint `table` now shows an inviter for.
    mutating func satisfied(by table: DiscoveredPeerTable) -> [Search] {
        guard !searches.isEmpty else { return [] }
        let done = searches.filter { search in
            table.inviters(hint: search.value.hint).contains { !search.value.excluded.contains($0.instanceName) }
        }.map(\.key)
        return done.compactMap { searches.removeValue(forKey: $0) }
    }

    /// Ends every search (the node stops).
    mutating func endAll() -> [Search] {
        defer { searches.removeAll() }
        return Array(searches.values)
    }
}
