import Foundation
import MeshCore
import MeshCrypto
import Testing
@testable import MeshDaemon

/// The tests' SplitMix64 (`SeededGenerator`), forked per part of the simulation so one part
/// drawing more numbers does not shift another.
private typealias RosterRandom = SeededGenerator

private extension SeededGenerator {
    /// An independent generator for part `part` of the run of `seed`.
    static func fork(_ seed: UInt64, _ part: UInt64) -> SeededGenerator {
        var mixer = SeededGenerator(seed: seed ^ (part &* 0xD1B5_4A32_D192_ED03))
        return SeededGenerator(seed: mixer.next())
    }

    mutating func chance(_ probability: Double) -> Bool { Double.random(in: 0..<1, using: &self) < probability }
}

/// Five devices change their set's membership at random (adds through different members,
/// re-adds, removals, renames, rotates), mostly without having seen each other's latest
/// records; devices go offline and crash, losing what they received but had not stored. Then
/// the records are delivered to every device in random orders, with duplicates and partitions
/// that heal. Every choice comes from the seed.
private struct RosterSimulation {
    static let deviceCount = 5
    static let devices = (0..<deviceCount).map { RosterTestDevice(UInt8(0xA0 + $0)) }
    static let geneses: [RosterRecord] = devices.enumerated().map { index, device in
        // A fixed, well-formed genesis cannot fail to encode.
        try! RosterRecord.make(kind: .genesis, parents: [], signer: device.signing, time: 0, subject: device.deviceKey,
                               name: "device \(index)")
    }
    static let indexOfKey: [[UInt8]: Int] = Dictionary(uniqueKeysWithValues: devices.enumerated().map { ($1.deviceKey, $0) })

    /// Only adds, removals, renames and rotates by members of device 0's set, each seen by
    /// every device before the next: the members must be what a plain list would say.
    let sequential: Bool
    var actions: RosterRandom
    var rosters: [Roster]
    /// What each device had written to its roster file.
    var stored: [[RosterRecord]]
    var online: [Bool]
    /// Every record made, in the order made.
    var made: [RosterRecord] = []
    var time: Int64 = 0
    var violations: [String] = []
    /// Each device's view from itself, and its record count when computed: between crashes a
    /// device's records only grow, so an equal count means the same records.
    var cachedViews: [(count: Int, view: RosterView)?] = Array(repeating: nil, count: deviceCount)
    /// sequential: the members and removed devices (indices) a plain list gives, and the names.
    var model: (members: Set<Int>, removed: Set<Int>, names: [Int: String]) = ([0], [], [:])

    init(seed: UInt64) {
        actions = RosterRandom.fork(seed, 1)
        sequential = seed % 8 == 0
        rosters = Self.geneses.map { Roster(records: [$0]) }
        stored = Self.geneses.map { [$0] }
        online = Array(repeating: true, count: Self.deviceCount)
        for index in 0..<Self.deviceCount { model.names[index] = "device \(index)" }
    }

    func view(_ device: Int, from viewpoint: Int? = nil) -> RosterView {
        RosterView(rosters[device], from: Self.devices[viewpoint ?? device].deviceKey, signingKey: Self.devices[viewpoint ?? device].signing.publicKey)
    }

    /// `device`'s view from itself, computed again only when its records changed. A device it
    /// saw removed is a member again only through a re-add that knows of the removal.
    mutating func ownView(_ device: Int) -> RosterView {
        if let cached = cachedViews[device], cached.count == rosters[device].count { return cached.view }
        let fresh = view(device)
        for returned in indices(cachedViews[device]?.view.removedKeys ?? []) where fresh.members[Self.devices[returned].id] != nil
            && !reAdded(returned, in: rosters[device]) {
            fail("device \(returned) is a member again at device \(device) without a re-add after its removal")
        }
        cachedViews[device] = (rosters[device].count, fresh)
        return fresh
    }

    mutating func fail(_ what: String) {
        if violations.count < 4 { violations.append(what) }
    }

    // MARK: - Changes

    mutating func runChanges() {
        if !sequential {
            // Device 0's set starts with 1…3 more devices, added through different members,
            // each add seen by the members before the next; the rest starts apart.
            var founded = [0]
            for new in 1...Int.random(in: 1...3, using: &actions) {
                let author = founded.randomElement(using: &actions)!
                guard makeAdd(by: author, of: new) else { return fail("device \(author) could not add device \(new)") }
                founded.append(new)
                for member in founded { deliverAll(from: author, to: member) }
            }
        }
        let steps = Int.random(in: 3...10, using: &actions)
        for _ in 0..<steps where violations.isEmpty {
            if sequential { sequentialStep() } else { randomStep() }
        }
    }

    private mutating func randomStep() {
        let roll = Int.random(in: 0..<100, using: &actions)
        let device = Int.random(in: 0..<Self.deviceCount, using: &actions)
        switch roll {
        case 0..<24: add(by: device)
        case 24..<44: remove(by: device)
        case 44..<51: rename(device)
        case 51..<55: rotate(device)
        case 55..<78: sync(device, Int.random(in: 0..<Self.deviceCount, using: &actions), fraction: Double.random(in: 0.2...1, using: &actions))
        case 78..<86: online[device].toggle()
        case 86..<93: stored[device] = rosters[device].records
        default: crash(device)
        }
    }

    private mutating func sequentialStep() {
        let members = model.members.sorted()
        let author = members.randomElement(using: &actions)!
        let roll = Int.random(in: 0..<100, using: &actions)
        let epochBefore = ownView(0).epoch
        var epochShouldChange: Bool? = false
        let change: String
        switch roll {
        case 0..<45:
            change = "an add"
            let outside = (0..<Self.deviceCount).filter { !model.members.contains($0) }
            guard let new = outside.randomElement(using: &actions) else { return }
            if model.removed.contains(new) { epochShouldChange = nil }  // a re-add undoes a removal
            guard makeAdd(by: author, of: new) else { return fail("device \(author) could not add device \(new)") }
            model.members.insert(new)
            model.removed.remove(new)
        case 45..<75:
            change = "a removal"
            guard let target = members.filter({ $0 != author }).randomElement(using: &actions) else { return }
            guard makeRecord(.remove, by: author, subject: target) else { return fail("device \(author) could not remove \(target)") }
            model.members.remove(target)
            model.removed.insert(target)
            epochShouldChange = true
        case 75..<92:
            change = "a rename"
            time += 1
            let name = "device \(author) as of \(time)"
            guard makeRecord(.rename, by: author, name: name) else { return fail("device \(author) could not rename") }
            model.names[author] = name
        default:
            change = "a rotate"
            guard makeRecord(.rotate, by: author) else { return fail("device \(author) could not rotate") }
            epochShouldChange = true
        }
        // Only the author has a record the others lack (the new device of an add has it too).
        for device in 0..<Self.deviceCount { deliverAll(from: author, to: device) }
        let from0 = ownView(0)
        let expected = Set(model.members.map { Self.devices[$0].deviceKey })
        if from0.memberKeys != expected || from0.removedKeys != Set(model.removed.map { Self.devices[$0].deviceKey }) {
            fail("sequential: members \(indices(from0.memberKeys)) removed \(indices(from0.removedKeys)), "
                 + "a plain list says \(model.members.sorted()) and \(model.removed.sorted())")
        }
        for member in model.members where from0.members[Self.devices[member].id]?.name != model.names[member] {
            fail("sequential: device \(member) is named \(from0.members[Self.devices[member].id]?.name ?? "-"), not \(model.names[member]!)")
        }
        if let shouldChange = epochShouldChange, (from0.epoch != epochBefore) != shouldChange {
            fail("sequential: the epoch \(shouldChange ? "stayed" : "changed") after \(change)")
        }
    }

    /// A member adds a device that is not one in its view (pairing by code: the new device gets
    /// the author's records, then countersigns). As a daemon proposes as soon as the channel is
    /// up, the author has often not seen the new device's records yet, so two members may add
    /// the same device.
    private mutating func add(by author: Int) {
        guard online[author] else { return }
        let candidates = (0..<Self.deviceCount).filter { $0 != author && online[$0] }
        guard let new = candidates.randomElement(using: &actions) else { return }
        deliverAll(from: author, to: new)
        if actions.chance(0.5) { deliverAll(from: new, to: author) }
        let authorView = ownView(author)
        guard !authorView.isRemoved(Self.devices[author].id), authorView.members[Self.devices[new].id] == nil else { return }
        if !makeAdd(by: author, of: new) { fail("device \(author) could not add device \(new)") }
    }

    private mutating func remove(by author: Int) {
        guard online[author] else { return }
        let authorView = ownView(author)
        guard !authorView.isRemoved(Self.devices[author].id) else { return }
        let targets = authorView.members.values.compactMap { Self.indexOfKey[$0.deviceKey] }.filter { $0 != author }.sorted()
        guard let target = targets.randomElement(using: &actions) else { return }
        if !makeRecord(.remove, by: author, subject: target) { return fail("device \(author) could not remove \(target)") }
        // The removed device hears of it while it still has a channel.
        if online[target], actions.chance(0.5) { deliverAll(from: author, to: target) }
    }

    private mutating func rename(_ author: Int) {
        guard online[author], !ownView(author).isRemoved(Self.devices[author].id) else { return }
        time += 1
        if !makeRecord(.rename, by: author, name: "device \(author) as of \(time)") { fail("device \(author) could not rename") }
    }

    private mutating func rotate(_ author: Int) {
        guard online[author], !ownView(author).isRemoved(Self.devices[author].id) else { return }
        if !makeRecord(.rotate, by: author) { fail("device \(author) could not rotate") }
    }

    /// Part of `from`'s records, in random order with duplicates, to `to` (both online).
    private mutating func sync(_ from: Int, _ to: Int, fraction: Double) {
        guard from != to, online[from], online[to] else { return }
        for (source, target) in [(from, to), (to, from)] {
            var batch = rosters[source].records.filter { _ in actions.chance(fraction) }
            batch += batch.filter { _ in actions.chance(0.2) }
            batch.shuffle(using: &actions)
            rosters[target].merge(batch)
        }
        checkSameRecordsSameView(from, to)
        if actions.chance(0.25) { checkMembersAgree(at: to) }
    }

    /// The device restarts with what it had stored: received records not yet written are lost.
    private mutating func crash(_ device: Int) {
        let restored = Roster(records: stored[device])
        if restored.count != stored[device].count {
            fail("device \(device) reloaded \(restored.count) of its \(stored[device].count) stored records")
        }
        rosters[device] = restored
        cachedViews[device] = nil  // fewer records now: an equal count later is not the same set
    }

    private mutating func deliverAll(from: Int, to: Int) {
        guard from != to else { return }
        rosters[to].merge(rosters[from].records.shuffled(using: &actions))
    }

    private mutating func makeAdd(by author: Int, of new: Int) -> Bool {
        time += 1
        let signer = Self.devices[author], device = Self.devices[new]
        guard let proposal = try? RosterRecord.make(kind: .add, parents: rosters[author].heads, signer: signer.signing, time: time,
                                                    subject: device.deviceKey, subjectSigningKey: device.signing.publicKey,
                                                    name: "device \(new)"),
              let signed = try? proposal.countersigned(by: device.signing)
        else { return false }
        // The new device stores the add it signed; the author stores it when it comes back.
        guard rosters[new].merge(rosters[author].records + [signed]).refused.isEmpty, rosters[new].contains(signed.hash),
              rosters[author].insert(signed) == .added else { return false }
        stored[new] = rosters[new].records
        stored[author] = rosters[author].records
        made.append(signed)
        return true
    }

    private mutating func makeRecord(_ kind: RosterRecord.Kind, by author: Int, subject: Int? = nil, name: String = "") -> Bool {
        time += 1
        guard let record = try? RosterRecord.make(kind: kind, parents: rosters[author].heads, signer: Self.devices[author].signing,
                                                  time: time, subject: subject.map { Self.devices[$0].deviceKey } ?? [], name: name),
              rosters[author].insert(record) == .added else { return false }
        stored[author] = rosters[author].records
        made.append(record)
        return true
    }

    // MARK: - Invariants

    /// Two devices with the same records compute the same view, from every device's viewpoint.
    mutating func checkSameRecordsSameView(_ first: Int, _ second: Int) {
        guard rosters[first].count == rosters[second].count, rosters[first].digest == rosters[second].digest else { return }
        if ownView(first) != view(second, from: first) {
            fail("devices \(first) and \(second) hold the same \(rosters[first].count) records but compute different views "
                 + "from device \(first)'s viewpoint: \(difference(ownView(first), view(second, from: first)))")
        }
    }

    /// A member of `device`'s view computes the same view from the same records.
    mutating func checkMembersAgree(at device: Int) {
        let own = ownView(device)
        if let member = indices(own.memberKeys).filter({ $0 != device }).randomElement(using: &actions) {
            let theirs = view(device, from: member)
            if theirs != own {
                fail("with device \(device)'s records, member \(member) and device \(device) compute different views: "
                     + difference(theirs, own))
            }
        }
    }

    /// Every record reaches every device, in an order of `delivery`'s choosing: first within
    /// random partitions, then everywhere, some twice.
    mutating func deliverEverything(_ delivery: inout RosterRandom) {
        let groupOf = (0..<Self.deviceCount).map { _ in Int.random(in: 0..<3, using: &delivery) }
        for _ in 0..<Int.random(in: 1...5, using: &delivery) {
            let from = Int.random(in: 0..<Self.deviceCount, using: &delivery)
            let to = Int.random(in: 0..<Self.deviceCount, using: &delivery)
            guard from != to, groupOf[from] == groupOf[to] else { continue }
            var batch = rosters[from].records.filter { _ in delivery.chance(0.7) }
            batch += batch.filter { _ in delivery.chance(0.3) }
            batch.shuffle(using: &delivery)
            rosters[to].merge(batch)
        }
        // The partitions heal: random exchanges, some cut short, then twice around a ring of
        // every device in random order, so every record reaches every device.
        for _ in 0..<Int.random(in: 0...3, using: &delivery) {
            let from = Int.random(in: 0..<Self.deviceCount, using: &delivery)
            let to = Int.random(in: 0..<Self.deviceCount, using: &delivery)
            guard from != to else { continue }
            var batch = rosters[from].records.shuffled(using: &delivery)
            if delivery.chance(0.5) { batch = Array(batch.prefix(Int.random(in: 0...batch.count, using: &delivery))) }
            rosters[to].merge(batch)
        }
        let ring = Array(0..<Self.deviceCount).shuffled(using: &delivery)
        for step in 0..<(2 * Self.deviceCount - 1) {
            let from = ring[step % Self.deviceCount], to = ring[(step + 1) % Self.deviceCount]
            var batch = rosters[from].records.shuffled(using: &delivery)
            batch += batch.filter { _ in delivery.chance(0.1) }
            rosters[to].merge(batch)
        }
    }

    /// Whether `roster` holds an add of `device` that has one of `device`'s removals in its past.
    func reAdded(_ device: Int, in roster: Roster) -> Bool {
        let key = Self.devices[device].deviceKey
        let removals = roster.records.indices.filter { roster.records[$0].kind == .remove && roster.records[$0].subject == key }
        return roster.records.indices.contains { index in
            roster.records[index].kind == .add && roster.records[index].subject == key
                && removals.contains { roster.isAncestor($0, of: index) }
        }
    }

    func indices(_ keys: Set<[UInt8]>) -> [Int] { keys.compactMap { Self.indexOfKey[$0] }.sorted() }

    /// How view `a` differs from view `b`, with devices by index.
    func difference(_ a: RosterView, _ b: RosterView) -> String {
        func name(_ key: [UInt8]?) -> String { key.map { Self.indexOfKey[$0].map(String.init) ?? "?" } ?? "-" }
        var parts = ["members \(indices(a.memberKeys)) vs \(indices(b.memberKeys))",
                     "removed \(indices(a.removedKeys)) vs \(indices(b.removedKeys))"]
        for device in Self.devices.indices {
            let id = Self.devices[device].id
            if let x = a.members[id], let y = b.members[id], x != y {
                parts.append("device \(device) named \"\(x.name)\" vs \"\(y.name)\", added by \(name(x.addedBy)) vs \(name(y.addedBy))")
            }
            if let x = a.removed[id], let y = b.removed[id], x != y {
                parts.append("device \(device) removed by \(name(x.by)) vs \(name(y.by)) at \(x.time) vs \(y.time)")
            }
        }
        if a.epoch != b.epoch { parts.append("the epochs differ") }
        return parts.joined(separator: ", ")
    }
}

/// The membership simulator: whatever the changes, losses and delivery orders, devices that
/// end with the same records agree on who is in the set.
@Suite("Roster convergence")
struct RosterConvergenceTests {
    static let seedCount: UInt64 = 2000
    static let chunks: UInt64 = 8

    /// MESH_ROSTER_SEED (decimal or 0x-hex), else a fixed base.
    static let seedBase: UInt64 = {
        let text = ProcessInfo.processInfo.environment["MESH_ROSTER_SEED"] ?? ""
        if text.hasPrefix("0x"), let value = UInt64(text.dropFirst(2), radix: 16) { return value }
        return UInt64(text) ?? 0x0005_EED0_2057
    }()

    @Test(arguments: UInt64(0)..<8)
    func devicesWithTheSameRecordsAgreeOnTheMembers(chunk: UInt64) {
        let perChunk = Self.seedCount / Self.chunks
        let first = Self.seedBase &+ chunk &* perChunk
        print("roster convergence: MESH_ROSTER_SEED=\(Self.seedBase), part \(chunk): seeds \(first) to \(first &+ perChunk &- 1)")
        for offset in 0..<perChunk {
            let seed = first &+ offset
            let violations = Self.run(seed: seed)
            #expect(violations.isEmpty, "seed \(seed) (rerun: MESH_ROSTER_SEED=\(seed) swift test --filter RosterConvergence): \(violations.joined(separator: "; "))")
            if !violations.isEmpty { return }
        }
    }

    /// One run; what went wrong, if anything.
    private static func run(seed: UInt64) -> [String] {
        var simulation = RosterSimulation(seed: seed)
        simulation.runChanges()
        guard simulation.violations.isEmpty else { return simulation.violations }

        // The records of the whole run, in the order made: what every device ends with.
        let reference = Roster(records: RosterSimulation.geneses + simulation.made)
        guard reference.count == RosterSimulation.geneses.count + simulation.made.count, reference.pending.isEmpty else {
            return ["only \(reference.count) of \(RosterSimulation.geneses.count + simulation.made.count) records fit together"]
        }
        let held = Set(simulation.rosters.flatMap { $0.records.map(\.hash) })
        guard held.count == reference.count else { return ["\(reference.count - held.count) records are on no device any more"] }
        var checks = RosterRandom.fork(seed, 4)
        var expected = ReferenceViews(roster: reference)
        // A device of device 0's set other than device 0 when there is one.
        let viewpoint = simulation.indices(expected[0].memberKeys).filter { $0 != 0 }.randomElement(using: &checks) ?? 0
        checkFinal(from: viewpoint, &expected, &simulation)

        // Everything delivered from where the changes left the devices, through partitions that
        // heal: every device ends with every record (it holds only records of the run, so the
        // same count is the same set), and the viewpoint computes the view of the order made
        // (and has no removed device back without a re-add: `ownView` checks).
        var delivered = simulation
        var delivery = RosterRandom.fork(seed, 2)
        delivered.deliverEverything(&delivery)
        simulation.violations += delivered.violations
        for device in 0..<RosterSimulation.deviceCount where delivered.rosters[device].count != reference.count {
            simulation.fail("device \(device) ends with \(delivered.rosters[device].count) of \(reference.count) records")
        }
        if delivered.rosters[viewpoint].count == reference.count {
            compare(delivered.ownView(viewpoint), expected[viewpoint], "after the partitions healed, device \(viewpoint)", &simulation)
        }
        // A device that missed it all gets every record at once: a few batches in random order, with duplicates.
        let late = viewpoint == 0 ? Int.random(in: 0..<RosterSimulation.deviceCount, using: &checks) : 0
        var roster = simulation.rosters[late]
        var everything = reference.records.shuffled(using: &delivery)
        everything += everything.filter { _ in delivery.chance(0.2) }
        everything.shuffle(using: &delivery)
        let cut = Int.random(in: 0...everything.count, using: &delivery)
        roster.merge(Array(everything[..<cut]))
        roster.merge(Array(everything[cut...]))
        if roster.count != reference.count || !roster.pending.isEmpty {
            simulation.fail("device \(late) holds \(roster.count) of \(reference.count) records after getting them all at once")
        } else {
            compare(RosterView(roster, from: RosterSimulation.devices[late].deviceKey, signingKey: RosterSimulation.devices[late].signing.publicKey), expected[late],
                    "with every record at once, device \(late)", &simulation)
        }
        if seed % 8 == 1, let problem = checkPairKeys(expected[viewpoint]) { simulation.fail(problem) }
        return simulation.violations
    }

    /// The views of the records of the whole run, each computed when first needed.
    private struct ReferenceViews {
        let roster: Roster
        var views: [RosterView?] = Array(repeating: nil, count: RosterSimulation.deviceCount)

        subscript(device: Int) -> RosterView {
            mutating get {
                if let view = views[device] { return view }
                let view = RosterView(roster, from: RosterSimulation.devices[device].deviceKey, signingKey: RosterSimulation.devices[device].signing.publicKey)
                views[device] = view
                return view
            }
        }
    }

    /// Whether `device` stood removed as record `index` saw it: a removal of it in the record's
    /// causal past that no add of it in that past followed (its removals from then on do not count).
    static func stoodRemoved(_ device: [UInt8], at index: Int, in roster: Roster) -> Bool {
        roster.records.indices.contains { removal in
            roster.records[removal].kind == .remove && roster.records[removal].subject == device && roster.isAncestor(removal, of: index)
                && !roster.records.indices.contains { add in
                    roster.records[add].kind == .add && roster.records[add].subject == device
                        && roster.isAncestor(removal, of: add) && roster.isAncestor(add, of: index)
                }
        }
    }

    /// The final view from `viewpoint`, a member in device 0's view: it is device 0's view, and
    /// a removal by a device of the set that no re-add follows removed its device (unless its
    /// author stood removed when it made it).
    private static func checkFinal(from viewpoint: Int, _ expected: inout ReferenceViews, _ simulation: inout RosterSimulation) {
        let view = expected[viewpoint]
        if viewpoint != 0, expected[0] != view {
            simulation.fail("device 0 sees member \(viewpoint), whose view differs: \(simulation.difference(view, expected[0]))")
        }
        let roster = expected.roster
        let set = view.memberKeys.union(view.removedKeys)
        for (index, record) in roster.records.enumerated() where record.kind == .remove {
            guard let author = roster.records.first(where: { $0.kind == .add && $0.subjectSigningKey == record.author
                                                             || $0.kind == .genesis && $0.author == record.author })?.subject,
                  set.contains(author), !Self.stoodRemoved(author, at: index, in: roster) else { continue }
            let followed = roster.records.indices.contains { roster.records[$0].kind == .add && roster.records[$0].subject == record.subject
                                                              && roster.isAncestor(index, of: $0) }
            if !followed, view.members[DeviceID(publicKey: record.subject)] != nil || view.removed[DeviceID(publicKey: record.subject)] == nil {
                simulation.fail("device \(viewpoint): a removal by a device of the set that no re-add follows did not remove its device")
            }
        }
    }

    private static func compare(_ view: RosterView, _ expected: RosterView, _ when: String, _ simulation: inout RosterSimulation) {
        guard view != expected else { return }
        simulation.fail("\(when) computes another view than the records in the order made: \(simulation.difference(view, expected))")
    }

    /// Both ends of every pair of members derive the same key, and no two pairs the same.
    private static func checkPairKeys(_ view: RosterView) -> String? {
        let members = view.members.values.compactMap { RosterSimulation.indexOfKey[$0.deviceKey] }.sorted()
        var keys: [SecretBytes] = []
        for (position, first) in members.enumerated() {
            for second in members[(position + 1)...] {
                let a = RosterSimulation.devices[first], b = RosterSimulation.devices[second]
                guard let forward = DeviceSetKeys.pairKey(own: a.keys, peer: b.deviceKey, epoch: view.epoch),
                      let backward = DeviceSetKeys.pairKey(own: b.keys, peer: a.deviceKey, epoch: view.epoch)
                else { return "no pair key for devices \(first) and \(second)" }
                if forward != backward { return "devices \(first) and \(second) derive different keys" }
                if keys.contains(forward) { return "the pair \(first)–\(second) has another pair's key" }
                if forward == DeviceSetKeys.pairKey(own: a.keys, peer: b.deviceKey, epoch: view.epoch.map { $0 ^ 1 }) {
                    return "the pair \(first)–\(second) keeps its key at another epoch"
                }
                keys.append(forward)
            }
        }
        return nil
    }
}
