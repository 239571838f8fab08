/// The source addresses (as ``SourceKey``s) that count as paired devices' for the reserved
/// unauthenticated connection slots: those a channel handshake with a paired device authenticated
/// from (or to) within the last `lifetime`.
///
/// Nothing unauthenticated puts an address here: an mDNS record naming a paired device's hint at
/// an address, or an address written in the paired-device store, does not. A device keeps at most
/// `perPeer` addresses (the oldest forgotten first) and the table at most `capacity`, so it stays
/// small whatever the devices do. A pure value; the time is passed in.
struct PairedSourceTable: Sendable {
    private struct Entry: Sendable {
        var peer: DeviceID
        var authenticatedAt: UInt64
    }

    /// How long an address counts after its last authenticated handshake (ns).
    let lifetime: UInt64
    /// Addresses kept per device.
    let perPeer: Int
    /// Addresses kept in all.
    let capacity: Int
    private var entries: [String: Entry] = [:]

    init(lifetimeNanoseconds: UInt64, perPeer: Int = 8, capacity: Int = 1024) {
        lifetime = lifetimeNanoseconds
        self.perPeer = max(1, perPeer)
        self.capacity = max(1, capacity)
    }

    /// Addresses kept now (some may have expired).
    var count: Int { entries.count }

    /// A handshake with `peer` authenticated on a connection from or to `key` at monotonic `now`.
    mutating func record(_ key: String, peer: DeviceID, now: UInt64) {
        entries[key] = Entry(peer: peer, authenticatedAt: now)
        let own = entries.filter { $0.value.peer == peer }
        if own.count > perPeer, let oldest = Self.oldest(own) { entries.removeValue(forKey: oldest) }
        if entries.count > capacity, let oldest = Self.oldest(entries) { entries.removeValue(forKey: oldest) }
    }

    /// Whether `key` counts as a paired device's at monotonic `now`.
    func contains(_ key: String, now: UInt64) -> Bool {
        guard let entry = entries[key] else { return false }
        return now < entry.authenticatedAt || now - entry.authenticatedAt < lifetime
    }

    /// `peer` was unpaired (or paired anew): its addresses no longer count.
    mutating func forget(_ peer: DeviceID) {
        entries = entries.filter { $0.value.peer != peer }
    }

    private static func oldest(_ entries: [String: Entry]) -> String? {
        entries.min { ($0.value.authenticatedAt, $0.key) < ($1.value.authenticatedAt, $1.key) }?.key
    }
}
