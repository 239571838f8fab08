import MeshCrypto
import MeshCore

/// Who is in the device set, as computed from a ``Roster`` by the device `own` (whose signing
/// key is `signingKey`): the same for every member that holds the same records, whatever order
/// they arrived in.
///
/// The rule (docs/PROTOCOL.md, "Membership"):
/// 1. *Trust* in a binding of a signing key to a device key starts at this device's own. An add
///    whose author's key is trusted makes its new device's binding trusted; an add whose new
///    device's binding is trusted makes its author's trusted, for the one device its author's
///    genesis in the add's causal past names (the new device checked it over their channel
///    before it countersigned). A device keeps the first binding trusted for it (canonical
///    order); an add naming another key for it joins nothing. Only trusted adds join devices.
/// 2. The devices joined to `own` by trusted adds are its *reach*. A remove counts when its
///    author's key is trusted for a device in reach that did not stand removed in the remove's
///    causal past (a counting remove of it there, and no trusted add of it after that one). A
///    counting remove of a device is *undone* by a trusted add of that device, with the remove
///    in its causal past, whose other side did not stand removed in the add's causal past (a new
///    pairing by code). A device with a remove that counts and is not undone is
///    **removed**: a removal wins over every add it does not precede.
/// 3. A trusted add, rename or rotate authored by a removed device is ignored unless it is in
///    the causal past of each of that device's removals (the remover knew of it).
/// 4. The members are the devices joined to `own` by the trusted adds left, less the removed
///    ones; at most 64 (the earliest adds first).
struct RosterView: Sendable, Equatable {
    struct Member: Sendable, Equatable {
        /// X25519 public key.
        var deviceKey: [UInt8]
        var name: String
        /// The device key of the member whose add brought it in (nil: the founder of a set).
        var addedBy: [UInt8]?
        var id: DeviceID { DeviceID(publicKey: deviceKey) }
    }

    struct Removal: Sendable, Equatable {
        var deviceKey: [UInt8]
        /// The device key of the member who removed it, and when (its wall clock, ns).
        var by: [UInt8]?
        var time: Int64
    }

    static let maximumMembers = 64

    /// Members by device ID, `own` included when it is one.
    var members: [DeviceID: Member] = [:]
    /// Removed devices by device ID.
    var removed: [DeviceID: Removal] = [:]
    /// Names the generation of derived pair keys: SHA-256 over the removes that count and the
    /// rotates.
    var epoch: [UInt8] = []

    /// Whether `own` was removed from the set.
    func isRemoved(_ id: DeviceID) -> Bool { removed[id] != nil }

    init() {}

    /// One trusted add: the two devices it joins, `author` the author's device.
    private struct Edge {
        var index: Int
        var author: [UInt8]
        var subject: [UInt8]
    }

    init(_ roster: Roster, from own: [UInt8], signingKey: [UInt8]) {
        let records = roster.records
        let order = records.indices.sorted { Self.precedes($0, $1, in: roster) }
        let adds = order.filter { records[$0].kind == .add }

        // 1. Trusted bindings and the adds they make trusted.
        var deviceOf: [[UInt8]: [UInt8]] = [signingKey: own]    // signing key → device key
        var keyOf: [[UInt8]: [UInt8]] = [own: signingKey]       // device key → signing key
        var edges: [Int: Edge] = [:]
        var progress = true
        var passes = 0
        while progress, passes <= adds.count {
            progress = false
            passes += 1
            for index in adds where edges[index] == nil {
                let add = records[index]
                if let author = deviceOf[add.author] {
                    guard author != add.subject, keyOf[add.subject] ?? add.subjectSigningKey == add.subjectSigningKey,
                          deviceOf[add.subjectSigningKey] ?? add.subject == add.subject else { continue }
                    keyOf[add.subject] = add.subjectSigningKey
                    deviceOf[add.subjectSigningKey] = add.subject
                    edges[index] = Edge(index: index, author: author, subject: add.subject)
                    progress = true
                } else if deviceOf[add.subjectSigningKey] == add.subject {
                    let geneses = records.indices.filter {
                        records[$0].kind == .genesis && records[$0].author == add.author && roster.isAncestor($0, of: index)
                    }
                    guard geneses.count == 1 else { continue }
                    let author = records[geneses[0]].subject
                    guard author != add.subject, keyOf[author] ?? add.author == add.author else { continue }
                    keyOf[author] = add.author
                    deviceOf[add.author] = author
                    edges[index] = Edge(index: index, author: author, subject: add.subject)
                    progress = true
                }
            }
        }
        let trusted = adds.compactMap { edges[$0] }

        // 2. Removes that count (in canonical order, so one whose author was removed before it
        //    is seen after that removal), and which are undone.
        let reach = Self.component(of: own, edges: trusted.map { ($0.author, $0.subject) })
        var counting: [[UInt8]: [Int]] = [:]
        /// Whether `device` stood removed as record `index` saw it: a counting remove of it in
        /// the record's causal past that no trusted add of it in that past followed.
        func removedBefore(_ device: [UInt8], _ index: Int) -> Bool {
            (counting[device] ?? []).contains { removal in
                roster.isAncestor(removal, of: index) && !trusted.contains { edge in
                    (edge.subject == device || edge.author == device) && roster.isAncestor(removal, of: edge.index)
                        && roster.isAncestor(edge.index, of: index)
                }
            }
        }
        for index in order where records[index].kind == .remove {
            let record = records[index]
            guard let author = deviceOf[record.author], reach.contains(author), !removedBefore(author, index) else { continue }
            counting[record.subject, default: []].append(index)
        }
        var effective: [[UInt8]: [Int]] = [:]
        for (device, removals) in counting {
            let left = removals.filter { removal in
                !trusted.contains { edge in
                    let other = edge.subject == device ? edge.author : (edge.author == device ? edge.subject : nil)
                    guard let other, !removedBefore(other, edge.index) else { return false }
                    return roster.isAncestor(removal, of: edge.index)
                }
            }
            if !left.isEmpty { effective[device] = left }
        }
        // 3. What removed authors did that their removers did not know of.
        func ignored(_ index: Int, author: [UInt8]?) -> Bool {
            guard let author, let removals = effective[author] else { return false }
            return removals.contains { $0 != index && !roster.isAncestor(index, of: $0) }
        }
        let kept = trusted.filter { !ignored($0.index, author: $0.author) }
        // 4. The members.
        let joined = Self.component(of: own, edges: kept.map { ($0.author, $0.subject) })
        var firstAdd: [[UInt8]: Edge] = [:]
        for edge in kept where firstAdd[edge.subject] == nil { firstAdd[edge.subject] = edge }
        var genesisOf: [[UInt8]: Int] = [:]
        for index in order where records[index].kind == .genesis {
            let record = records[index]
            guard deviceOf[record.author] == record.subject, genesisOf[record.subject] == nil else { continue }
            genesisOf[record.subject] = index
        }
        let candidates = joined.filter { effective[$0] == nil }.sorted { a, b in
            let da = firstAdd[a].map { roster.depth(of: $0.index) } ?? 0
            let db = firstAdd[b].map { roster.depth(of: $0.index) } ?? 0
            return da != db ? da < db : a.lexicographicallyPrecedes(b)
        }.prefix(Self.maximumMembers)
        // Renames by each device, latest (deepest) wins.
        var renamed: [[UInt8]: Int] = [:]
        for index in order where records[index].kind == .rename {
            guard let device = deviceOf[records[index].author], !ignored(index, author: device) else { continue }
            renamed[device] = index
        }
        for device in candidates {
            let nameSource = renamed[device] ?? firstAdd[device]?.index ?? genesisOf[device]
            members[DeviceID(publicKey: device)] = Member(deviceKey: device, name: nameSource.map { records[$0].name } ?? "",
                                                          addedBy: firstAdd[device]?.author)
        }
        var epochParts: [[UInt8]] = counting.values.flatMap { $0.map { records[$0].hash } }
        for (device, indices) in effective {
            let first = indices.min { Self.precedes($0, $1, in: roster) }!
            removed[DeviceID(publicKey: device)] = Removal(deviceKey: device, by: deviceOf[records[first].author],
                                                           time: records[first].time)
        }
        for index in order where records[index].kind == .rotate {
            guard let device = deviceOf[records[index].author], joined.contains(device), !ignored(index, author: device) else { continue }
            epochParts.append(records[index].hash)
        }
        var epochBytes = Array("SessionMesh set epoch v1".utf8)
        for part in epochParts.sorted(by: { $0.lexicographicallyPrecedes($1) }) { epochBytes += part }
        epoch = PairingSupport.sha256(epochBytes)
    }

    /// Whether record `a` comes before `b` in the canonical order (depth, then hash).
    static func precedes(_ a: Int, _ b: Int, in roster: Roster) -> Bool {
        let da = roster.depth(of: a), db = roster.depth(of: b)
        return da != db ? da < db : roster.records[a].hash.lexicographicallyPrecedes(roster.records[b].hash)
    }

    /// The device keys joined to `start` by `edges` (undirected), `start` included.
    static func component(of start: [UInt8], edges: [([UInt8], [UInt8])]) -> Set<[UInt8]> {
        var neighbours: [[UInt8]: [[UInt8]]] = [:]
        for (a, b) in edges {
            neighbours[a, default: []].append(b)
            neighbours[b, default: []].append(a)
        }
        var seen: Set<[UInt8]> = [start]
        var stack = [start]
        while let next = stack.popLast() {
            for other in neighbours[next] ?? [] where seen.insert(other).inserted { stack.append(other) }
        }
        return seen
    }
}
