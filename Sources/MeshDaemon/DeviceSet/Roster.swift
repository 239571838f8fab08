import MeshCrypto
import MeshCore

/// The records of the device set this daemon knows, in an order where every record comes
/// after its parents, with their causal pasts. A value type without I/O; ``view(from:)``
/// computes who is a member.
///
/// Bounds (any paired member can send records): at most ``maximumRecords`` records, at most
/// ``maximumPerAuthor`` by one signing key, and at most ``maximumPending`` records whose
/// parents have not arrived yet (the oldest are forgotten first).
struct Roster: Sendable {
    static let maximumRecords = 2048
    static let maximumPerAuthor = 256
    static let maximumPending = 256

    /// Every record, parents first.
    private(set) var records: [RosterRecord] = []
    /// Index in `records` by hash.
    private var positions: [[UInt8]: Int] = [:]
    /// Each record's causal past (indices of its ancestors) as a bit set.
    private var ancestry: [BitSet] = []
    /// Length of the longest parent chain ending at each record (a genesis has 1).
    private var depths: [Int] = []
    /// Records by author.
    private var authored: [[UInt8]: Int] = [:]
    /// Records whose parents have not all arrived, oldest first.
    private(set) var pending: [RosterRecord] = []

    init() {}

    /// Every record, parents first (what the roster file and a sync carry).
    init(records: [RosterRecord]) {
        _ = merge(records)
    }

    /// What `insert` did.
    enum Insertion: Equatable, Sendable {
        case added
        case duplicate
        /// Kept aside until its parents arrive.
        case pending
        case refused(String)
    }

    var count: Int { records.count }

    func contains(_ hash: [UInt8]) -> Bool { positions[hash] != nil }

    /// Adds one record whose signatures were checked (`RosterRecord.decode`).
    mutating func insert(_ record: RosterRecord) -> Insertion {
        if positions[record.hash] != nil { return .duplicate }
        guard record.parents.allSatisfy({ positions[$0] != nil }) else {
            if !pending.contains(record) {
                pending.append(record)
                if pending.count > Self.maximumPending { pending.removeFirst() }
            }
            return .pending
        }
        guard records.count < Self.maximumRecords else { return .refused("the roster holds \(Self.maximumRecords) records") }
        guard authored[record.author, default: 0] < Self.maximumPerAuthor else {
            return .refused("its author made \(Self.maximumPerAuthor) records already")
        }
        var past = BitSet()
        var depth = 1
        for parent in record.parents {
            let index = positions[parent]!
            past.insert(index)
            past.formUnion(ancestry[index])
            depth = max(depth, depths[index] + 1)
        }
        if record.kind != .genesis {
            // The author's signing key must have been bound to a device before it signed.
            let bound = past.indices.contains { index in
                let earlier = records[index]
                return (earlier.kind == .genesis && earlier.author == record.author)
                    || (earlier.kind == .add && earlier.subjectSigningKey == record.author)
            }
            guard bound else { return .refused("its author is not in its causal past") }
        }
        positions[record.hash] = records.count
        records.append(record)
        ancestry.append(past)
        depths.append(depth)
        authored[record.author, default: 0] += 1
        var low = 0, high = sortedHashes.count
        while low < high {
            let middle = (low + high) / 2
            if sortedHashes[middle].lexicographicallyPrecedes(record.hash) { low = middle + 1 } else { high = middle }
        }
        sortedHashes.insert(record.hash, at: low)
        digest = Self.digest(of: sortedHashes)
        return .added
    }

    /// Inserts `batch` (any order) and whatever pending records it completes. Returns how many
    /// records were added and why others were refused.
    @discardableResult
    mutating func merge(_ batch: [RosterRecord]) -> (added: Int, refused: [String]) {
        var added = 0
        var refused: [String] = []
        // A pending record refused once its parents arrived is dropped, not retried (and
        // reported again) at every later round and merge.
        var refusedHashes = Set<[UInt8]>()
        var queue = batch
        var progress = true
        var rounds = 0
        while progress, rounds <= Self.maximumRecords {
            progress = false
            rounds += 1
            var next: [RosterRecord] = []
            for record in queue + pending {
                switch insert(record) {
                case .added:
                    added += 1
                    progress = true
                case .pending:
                    next.append(record)
                case .duplicate:
                    break
                case .refused(let why):
                    refused.append(why)
                    refusedHashes.insert(record.hash)
                }
            }
            pending = pending.filter { positions[$0.hash] == nil && !refusedHashes.contains($0.hash) }
            queue = next.filter { positions[$0.hash] == nil && !pending.contains($0) }
        }
        return (added, refused)
    }

    /// Hashes no other record names as a parent, ascending (at most `RosterRecord.maximumParents`,
    /// the deepest first: a new record's parents).
    var heads: [[UInt8]] {
        var named = Set<[UInt8]>()
        for record in records { for parent in record.parents { named.insert(parent) } }
        let all = records.indices.filter { !named.contains(records[$0].hash) }
        let chosen = all.sorted { a, b in
            depths[a] != depths[b] ? depths[a] > depths[b] : records[a].hash.lexicographicallyPrecedes(records[b].hash)
        }.prefix(RosterRecord.maximumParents)
        return chosen.map { records[$0].hash }.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// SHA-256 over the sorted hashes of every record: equal digests, equal rosters. Kept up
    /// to date by `insert` (channels compare it on every head).
    private(set) var digest: [UInt8] = Roster.digest(of: [])
    /// Every record's hash, ascending (what `digest` covers).
    private var sortedHashes: [[UInt8]] = []

    static func digest(of sortedHashes: [[UInt8]]) -> [UInt8] {
        var bytes = Array("SessionMesh roster digest v1".utf8)
        bytes.reserveCapacity(bytes.count + 32 * sortedHashes.count)
        for hash in sortedHashes { bytes += hash }
        return PairingSupport.sha256(bytes)
    }

    /// Whether record `ancestor` (an index) is in the causal past of record `index`.
    func isAncestor(_ ancestor: Int, of index: Int) -> Bool { ancestry[index].contains(ancestor) }

    func depth(of index: Int) -> Int { depths[index] }

    func position(of hash: [UInt8]) -> Int? { positions[hash] }
}

/// A growable set of small non-negative integers.
struct BitSet: Sendable, Equatable {
    private(set) var words: [UInt64] = []

    mutating func insert(_ value: Int) {
        let word = value >> 6
        if word >= words.count { words += [UInt64](repeating: 0, count: word - words.count + 1) }
        words[word] |= 1 << UInt64(value & 63)
    }

    func contains(_ value: Int) -> Bool {
        let word = value >> 6
        return word < words.count && words[word] & (1 << UInt64(value & 63)) != 0
    }

    mutating func formUnion(_ other: BitSet) {
        if other.words.count > words.count { words += [UInt64](repeating: 0, count: other.words.count - words.count) }
        for index in other.words.indices { words[index] |= other.words[index] }
    }

    var indices: [Int] {
        var out: [Int] = []
        for (w, word) in words.enumerated() where word != 0 {
            for bit in 0..<64 where word & (1 << UInt64(bit)) != 0 { out.append(w * 64 + bit) }
        }
        return out
    }
}
