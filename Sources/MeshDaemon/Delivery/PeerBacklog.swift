import MeshCore

/// What one loop turn queued per peer (realtime items, datagram acks), peers in the order they
/// were first queued to in the turn, each peer's elements in queue order.
///
/// A dictionary would do the grouping too, but walking it at the turn's end would follow Swift's
/// per-process hash seed, so the order of the datagrams to different peers would change from
/// one run to the next (and a simulated run would not replay from its seed alone). A turn
/// reaches a handful of peers, so a lookup scans them, starting with the peer queued to last
/// (a burst to one peer finds it at once): no hashing of the peer's 30 bytes per message.
struct PeerBacklog<Element>: Sequence {
    private(set) var entries: [(peer: DeviceID, elements: [Element])] = []

    init() {}

    var isEmpty: Bool { entries.isEmpty }

    /// Whether something is queued for `peer`.
    func contains(_ peer: DeviceID) -> Bool { index(of: peer) != nil }

    /// What is queued for `peer`, nil when nothing.
    subscript(peer: DeviceID) -> [Element]? { index(of: peer).map { entries[$0].elements } }

    /// Queues `element` for `peer`, after what is queued for it already.
    mutating func append(_ element: Element, for peer: DeviceID) {
        if let index = index(of: peer) {
            entries[index].elements.append(element)
        } else {
            entries.append((peer, [element]))
        }
    }

    /// Empties it, keeping the storage of the peer list for the next turn.
    mutating func removeAll() { entries.removeAll(keepingCapacity: true) }

    func makeIterator() -> IndexingIterator<[(peer: DeviceID, elements: [Element])]> { entries.makeIterator() }

    private func index(of peer: DeviceID) -> Int? {
        guard let last = entries.indices.last else { return nil }
        if entries[last].peer == peer { return last }
        for index in 0..<last where entries[index].peer == peer { return index }
        return nil
    }
}

extension PeerBacklog: Sendable where Element: Sendable {}
