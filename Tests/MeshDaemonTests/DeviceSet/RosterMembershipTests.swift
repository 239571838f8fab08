import MeshCore
import MeshCrypto
import Testing
@testable import MeshDaemon

/// Builds a roster record by record as devices would make them: each record is signed by its
/// author (an add countersigned by the new device) and has, unless told otherwise, the
/// roster's current heads as parents.
struct RosterBuilder {
    var roster = Roster()
    var time: Int64 = 1_700_000_000_000_000_000

    /// Every device's own genesis, named "device n" after its key byte.
    @discardableResult
    mutating func genesis(_ device: RosterTestDevice) throws -> RosterRecord {
        try insert(RosterRecord.make(kind: .genesis, parents: [], signer: device.signing, time: tick(),
                                     subject: device.deviceKey, name: Self.name(of: device)))
    }

    @discardableResult
    mutating func add(_ author: RosterTestDevice, _ new: RosterTestDevice, parents: [[UInt8]]? = nil,
                      name: String? = nil) throws -> RosterRecord {
        try insert(RosterRecord.make(kind: .add, parents: parents ?? roster.heads, signer: author.signing, time: tick(),
                                     subject: new.deviceKey, subjectSigningKey: new.signing.publicKey,
                                     name: name ?? Self.name(of: new)).countersigned(by: new.signing))
    }

    @discardableResult
    mutating func remove(_ author: RosterTestDevice, _ device: RosterTestDevice, parents: [[UInt8]]? = nil) throws -> RosterRecord {
        try insert(RosterRecord.make(kind: .remove, parents: parents ?? roster.heads, signer: author.signing, time: tick(),
                                     subject: device.deviceKey))
    }

    @discardableResult
    mutating func rename(_ author: RosterTestDevice, _ name: String, parents: [[UInt8]]? = nil) throws -> RosterRecord {
        try insert(RosterRecord.make(kind: .rename, parents: parents ?? roster.heads, signer: author.signing, time: tick(), name: name))
    }

    @discardableResult
    mutating func rotate(_ author: RosterTestDevice, parents: [[UInt8]]? = nil) throws -> RosterRecord {
        try insert(RosterRecord.make(kind: .rotate, parents: parents ?? roster.heads, signer: author.signing, time: tick()))
    }

    /// Inserts `record`, which must be added (a test that builds a roster means every record).
    @discardableResult
    mutating func insert(_ record: RosterRecord) throws -> RosterRecord {
        let result = roster.insert(record)
        try #require(result == .added, "\(record.kind) by \(record.author.prefix(2)): \(result)")
        return record
    }

    func view(from device: RosterTestDevice) -> RosterView { RosterView(roster, from: device.deviceKey, signingKey: device.signing.publicKey) }

    private mutating func tick() -> Int64 {
        time += 1_000_000_000
        return time
    }

    static func name(of device: RosterTestDevice) -> String {
        "device \(RosterTestDevice.numbered.firstIndex { $0.deviceKey == device.deviceKey }.map { $0 + 1 } ?? 0)"
    }
}

extension RosterView {
    /// The members' device keys, for comparing with devices.
    var memberKeys: Set<[UInt8]> { Set(members.values.map(\.deviceKey)) }
    var removedKeys: Set<[UInt8]> { Set(removed.values.map(\.deviceKey)) }
}

/// Who is in the device set (RosterView's rule): what each device computes from the records.
@Suite("Roster membership")
struct RosterMembershipTests {
    static let a = RosterTestDevice.numbered[0]
    static let b = RosterTestDevice.numbered[1]
    static let c = RosterTestDevice.numbered[2]
    static let d = RosterTestDevice.numbered[3]
    static let e = RosterTestDevice.numbered[4]
    static let f = RosterTestDevice.numbered[5]
    static let g = RosterTestDevice.numbered[6]
    static let n = RosterTestDevice.numbered[7]
    static let x = RosterTestDevice.numbered[8]

    static func keys(_ devices: RosterTestDevice...) -> Set<[UInt8]> { Set(devices.map(\.deviceKey)) }

    /// A: genesis; A adds B; B adds C. Every device has its own genesis too, as every daemon makes one.
    static func chain() throws -> RosterBuilder {
        var builder = RosterBuilder()
        try builder.genesis(a)
        try builder.genesis(b)
        try builder.genesis(c)
        try builder.add(a, b)
        try builder.add(b, c)
        return builder
    }

    @Test func everyDeviceOfAChainOfAddsSeesTheSameThreeMembers() throws {
        let builder = try Self.chain()
        let fromA = builder.view(from: Self.a)
        #expect(fromA.memberKeys == Self.keys(Self.a, Self.b, Self.c))
        #expect(fromA.members[Self.a.id]?.addedBy == nil)
        #expect(fromA.members[Self.b.id]?.addedBy == Self.a.deviceKey)
        #expect(fromA.members[Self.c.id]?.addedBy == Self.b.deviceKey)
        #expect(fromA.members[Self.a.id]?.name == "device 1")
        #expect(fromA.members[Self.c.id]?.name == "device 3")
        #expect(fromA.removed.isEmpty)
        #expect(!fromA.isRemoved(Self.a.id))
        #expect(builder.view(from: Self.b) == fromA)
        #expect(builder.view(from: Self.c) == fromA)
    }

    /// A device alone (only its genesis) is the one member of its own set.
    @Test func aDeviceWithOnlyItsGenesisIsItsOwnSet() throws {
        var builder = RosterBuilder()
        try builder.genesis(Self.a)
        #expect(builder.view(from: Self.a).memberKeys == Self.keys(Self.a))
        #expect(builder.view(from: Self.a).members[Self.a.id]?.name == "device 1")
    }

    /// A device outside the set (its own genesis, the set's records as parents) adds X: its add
    /// joins nothing to the set, and neither it nor X is a member; it sees a set of two.
    @Test func aDeviceThatIsNotAMemberCannotAdd() throws {
        var builder = try Self.chain()
        try builder.genesis(Self.n)
        try builder.add(Self.n, Self.x)
        let fromA = builder.view(from: Self.a)
        #expect(fromA.memberKeys == Self.keys(Self.a, Self.b, Self.c))
        #expect(builder.view(from: Self.c) == fromA)
        #expect(builder.view(from: Self.n).memberKeys == Self.keys(Self.n, Self.x))
        // Nor can it remove or rename a member, or change the epoch.
        let epoch = fromA.epoch
        try builder.remove(Self.n, Self.b)
        try builder.rename(Self.n, "not a member")
        try builder.rotate(Self.n)
        let after = builder.view(from: Self.a)
        #expect(after.memberKeys == Self.keys(Self.a, Self.b, Self.c))
        #expect(after.removed.isEmpty)
        #expect(after.epoch == epoch)
    }

    /// A device outside the set "adds" a member's device key with a signing key of its own
    /// (it countersigns that add itself). Nothing proves the member holds that signing key,
    /// so the outsider must not become a member, nor speak for the member.
    @Test func anOutsiderCannotJoinByAddingAMembersDeviceKeyWithAKeyItHolds() throws {
        var builder = try Self.chain()
        try builder.genesis(Self.n)
        let fake = RosterTestDevice(0xF0)  // a signing key the outsider holds
        try builder.insert(RosterRecord.make(kind: .add, parents: builder.roster.heads, signer: Self.n.signing, time: 1,
                                             subject: Self.a.deviceKey, subjectSigningKey: fake.signing.publicKey,
                                             name: "A").countersigned(by: fake.signing))
        #expect(builder.view(from: Self.a).memberKeys == Self.keys(Self.a, Self.b, Self.c))
    }

    /// A genesis is a claim nobody checks: an outsider's genesis naming a member's device key
    /// must not let the outsider's signing key add devices as that member.
    @Test func aGenesisForgedForAMembersDeviceKeyCannotAdd() throws {
        var builder = try Self.chain()
        let forger = RosterTestDevice(0xF1)
        try builder.insert(RosterRecord.make(kind: .genesis, parents: [], signer: forger.signing, time: 1,
                                             subject: Self.a.deviceKey, name: "A"))
        try builder.add(forger, Self.x)
        #expect(builder.view(from: Self.a).memberKeys == Self.keys(Self.a, Self.b, Self.c))
    }

    @Test func aRemovedDeviceIsRemovedForEveryoneAndKnowsIt() throws {
        var builder = try Self.chain()
        let removal = try builder.remove(Self.a, Self.c)
        let fromA = builder.view(from: Self.a)
        #expect(fromA.memberKeys == Self.keys(Self.a, Self.b))
        #expect(fromA.removed[Self.c.id] == RosterView.Removal(deviceKey: Self.c.deviceKey, by: Self.a.deviceKey, time: removal.time))
        #expect(builder.view(from: Self.b) == fromA)
        let fromC = builder.view(from: Self.c)
        #expect(fromC.isRemoved(Self.c.id))
        #expect(fromC.members[Self.c.id] == nil)
        #expect(fromC.removed[Self.c.id]?.by == Self.a.deviceKey)
    }

    /// A removes C while B, not knowing, adds C again (its add has not the removal as parent):
    /// the removal wins, for every device, in whatever order the records arrive.
    @Test func aRemovalWinsOverAConcurrentAddOfTheSameDevice() throws {
        var builder = try Self.chain()
        let heads = builder.roster.heads
        let removal = try builder.remove(Self.a, Self.c, parents: heads)
        let add = try builder.add(Self.b, Self.c, parents: heads, name: "C again")
        for view in [builder.view(from: Self.a), builder.view(from: Self.b)] {
            #expect(view.memberKeys == Self.keys(Self.a, Self.b))
            #expect(view.removedKeys == Self.keys(Self.c))
        }
        #expect(builder.view(from: Self.c).isRemoved(Self.c.id))
        // The other order of arrival gives the same view.
        let records = builder.roster.records.filter { $0 != removal && $0 != add }
        let reordered = Roster(records: records + [add, removal])
        #expect(RosterView(reordered, from: Self.b.deviceKey, signingKey: Self.b.signing.publicKey) == builder.view(from: Self.b))
    }

    /// Pairing C again by code after its removal (an add with the removal in its past) brings
    /// it back, for everyone.
    @Test func aReAddThatKnowsOfTheRemovalBringsTheDeviceBack() throws {
        var builder = try Self.chain()
        try builder.remove(Self.a, Self.c)
        try builder.add(Self.b, Self.c, name: "C again")
        let fromA = builder.view(from: Self.a)
        #expect(fromA.memberKeys == Self.keys(Self.a, Self.b, Self.c))
        #expect(fromA.removed.isEmpty)
        #expect(builder.view(from: Self.c) == fromA)
        #expect(!builder.view(from: Self.c).isRemoved(Self.c.id))
    }

    /// What a removed device did that its removal did not know of is ignored, with everything
    /// joined only through it; what it did before (in the removal's past) still counts.
    @Test func addsByARemovedDeviceCountOnlyWhenTheRemovalKnewOfThem() throws {
        var builder = try Self.chain()
        try builder.genesis(Self.g)
        try builder.add(Self.c, Self.g)  // before the removal
        let heads = builder.roster.heads
        try builder.remove(Self.a, Self.c, parents: heads)
        let concurrent = try builder.add(Self.c, Self.d, parents: heads)  // C did not know yet
        try builder.add(Self.d, Self.f, parents: [concurrent.hash])  // joined only through C's ignored add
        try builder.rename(Self.c, "renamed while removed", parents: [concurrent.hash])
        let fromA = builder.view(from: Self.a)
        #expect(fromA.memberKeys == Self.keys(Self.a, Self.b, Self.g))
        #expect(fromA.removedKeys == Self.keys(Self.c))
        #expect(fromA.members[Self.g.id]?.addedBy == Self.c.deviceKey)
        #expect(builder.view(from: Self.b) == fromA)
        #expect(builder.view(from: Self.g) == fromA)
        // D and F are a set of their own, apart from A's.
        #expect(builder.view(from: Self.d).memberKeys == Self.keys(Self.d, Self.f))
    }

    /// The removed device, after hearing of its removal, adds itself back with a new signing
    /// key of its own: that is not a pairing by a member, and must not undo the removal.
    @Test func aRemovedDeviceCannotUndoItsOwnRemoval() throws {
        var builder = try Self.chain()
        try builder.remove(Self.a, Self.c)
        let fresh = RosterTestDevice(0xF2)
        try builder.insert(RosterRecord.make(kind: .add, parents: builder.roster.heads, signer: Self.c.signing, time: 1,
                                             subject: Self.c.deviceKey, subjectSigningKey: fresh.signing.publicKey,
                                             name: "C").countersigned(by: fresh.signing))
        #expect(builder.view(from: Self.a).removedKeys == Self.keys(Self.c))
    }

    /// A removed device that knows it was removed (its record has the removal as parent) removes
    /// a member: a record its removal did not know of, so it must not count.
    @Test func aRemovalByADeviceThatKnowsItWasRemovedDoesNotCount() throws {
        var builder = try Self.chain()
        try builder.remove(Self.a, Self.c)
        try builder.remove(Self.c, Self.b)  // parents: the heads, A's removal of C among them
        #expect(builder.view(from: Self.a).memberKeys == Self.keys(Self.a, Self.b))
        #expect(builder.view(from: Self.a).isRemoved(Self.c.id))
    }

    @Test func theDeepestRenameWinsWhateverTheOrder() throws {
        var builder = try Self.chain()
        #expect(builder.view(from: Self.a).members[Self.c.id]?.name == "device 3")
        let base = builder.roster.heads
        let first = try builder.rename(Self.c, "Study", parents: base)
        let second = try builder.rename(Self.c, "Office", parents: [first.hash])
        let concurrent = try builder.rename(Self.c, "Zzz concurrent", parents: base)  // shallower than "Office"
        #expect(builder.view(from: Self.a).members[Self.c.id]?.name == "Office")
        #expect(builder.view(from: Self.b).members[Self.c.id]?.name == "Office")
        let others = builder.roster.records.filter { ![first, second, concurrent].contains($0) }
        let reordered = Roster(records: others + [concurrent, first, second].reversed())
        #expect(RosterView(reordered, from: Self.b.deviceKey, signingKey: Self.b.signing.publicKey).members[Self.c.id]?.name == "Office")
        try builder.rename(Self.c, "Later")
        #expect(builder.view(from: Self.a).members[Self.c.id]?.name == "Later")
        // A rename only names its author: B's rename leaves C's name.
        try builder.rename(Self.b, "Bee")
        #expect(builder.view(from: Self.a).members[Self.b.id]?.name == "Bee")
        #expect(builder.view(from: Self.a).members[Self.c.id]?.name == "Later")
    }

    /// Pair keys change (a new epoch) on an effective removal and on a rotate, the same for every
    /// member; an add or a rename leaves them, and so does what a removed device did unknown.
    @Test func theEpochChangesOnRemovalsAndRotatesAndIsTheSameForAllMembers() throws {
        var builder = try Self.chain()
        let start = builder.view(from: Self.a).epoch
        #expect(start.count == 32)
        try builder.genesis(Self.d)
        try builder.add(Self.a, Self.d)
        try builder.rename(Self.b, "Bee")
        #expect(builder.view(from: Self.a).epoch == start)

        let heads = builder.roster.heads
        try builder.remove(Self.a, Self.d, parents: heads)
        let removed = builder.view(from: Self.a).epoch
        #expect(removed != start)
        try builder.rotate(Self.d, parents: heads)  // by D, which did not know of its removal
        #expect(builder.view(from: Self.a).epoch == removed)

        try builder.rotate(Self.b)
        let rotated = builder.view(from: Self.a).epoch
        #expect(rotated != removed && rotated != start)
        for device in [Self.b, Self.c] { #expect(builder.view(from: device).epoch == rotated) }
        #expect(builder.view(from: Self.d).epoch == rotated)  // the removed device computes it too
    }

    /// A removal by an outsider is not effective, so the epoch does not move either.
    @Test func aRemovalThatDoesNotCountLeavesTheEpoch() throws {
        var builder = try Self.chain()
        try builder.genesis(Self.n)
        let epoch = builder.view(from: Self.a).epoch
        try builder.remove(Self.n, Self.c)
        #expect(builder.view(from: Self.a).epoch == epoch)
        #expect(builder.view(from: Self.a).removed.isEmpty)
    }

    /// 65 devices joined: the 64 added earliest are members; removals still apply, and a
    /// freed place goes to the next one.
    @Test func aSixtyFifthDeviceIsNotAMember() throws {
        var builder = RosterBuilder()
        let devices = Array(RosterTestDevice.numbered.prefix(65))
        try builder.genesis(devices[0])
        for new in devices.dropFirst() { try builder.add(devices[0], new) }
        let full = builder.view(from: devices[0])
        #expect(full.members.count == RosterView.maximumMembers)
        #expect(full.memberKeys == Set(devices.prefix(64).map(\.deviceKey)))
        #expect(builder.view(from: devices[64]).members[devices[64].id] == nil)
        #expect(builder.view(from: devices[30]) == full)

        try builder.remove(devices[0], devices[64])
        let outsiderRemoved = builder.view(from: devices[0])
        #expect(outsiderRemoved.removedKeys == [devices[64].deviceKey])
        #expect(outsiderRemoved.memberKeys == full.memberKeys)
        #expect(builder.view(from: devices[64]).isRemoved(devices[64].id))

        let next = RosterTestDevice.numbered[65]
        try builder.genesis(next)
        try builder.add(devices[0], next)
        try builder.remove(devices[0], devices[10])
        let after = builder.view(from: devices[0])
        #expect(after.members.count == RosterView.maximumMembers)
        #expect(after.members[devices[10].id] == nil)
        #expect(after.removedKeys == [devices[64].deviceKey, devices[10].deviceKey])
        #expect(after.members[next.id] != nil)
    }
}

/// The roster's own bounds and ordering: what any paired member can make it hold.
@Suite("Roster bounds")
struct RosterBoundsTests {
    static let a = RosterTestDevice.numbered[0]
    static let b = RosterTestDevice.numbered[1]
    static let c = RosterTestDevice.numbered[2]

    @Test func oneAuthorCanMakeAtMostItsShare() throws {
        var builder = RosterBuilder()
        try builder.genesis(Self.a)
        try builder.genesis(Self.b)
        try builder.add(Self.a, Self.b)
        for index in 0..<(Roster.maximumPerAuthor - 2) { try builder.rename(Self.a, "A \(index)") }  // genesis + add + these
        let extra = try RosterRecord.make(kind: .rename, parents: builder.roster.heads, signer: Self.a.signing, time: 1, name: "one more")
        guard case .refused = builder.roster.insert(extra) else {
            Issue.record("the \(Roster.maximumPerAuthor + 1)th record of one author was not refused")
            return
        }
        #expect(!builder.roster.contains(extra.hash))
        try builder.rename(Self.b, "B still can")
        #expect(builder.view(from: Self.b).members[Self.a.id]?.name == "A \(Roster.maximumPerAuthor - 3)")
    }

    /// A record whose parents have not arrived waits; the merge that brings them inserts it.
    @Test func aRecordWhoseParentsArriveLaterIsInsertedByTheMerge() throws {
        var source = RosterBuilder()
        try source.genesis(Self.a)
        try source.genesis(Self.b)
        let add = try source.add(Self.a, Self.b)
        let rename = try source.rename(Self.b, "Bee")
        let removal = try source.remove(Self.b, Self.a)

        var roster = Roster()
        #expect(roster.insert(removal) == .pending)
        #expect(roster.insert(rename) == .pending)
        #expect(roster.insert(rename) == .pending)
        #expect(roster.count == 0)
        #expect(roster.pending.count == 2)
        let result = roster.merge([add, source.roster.records[0], source.roster.records[1]])
        #expect(result.added == 5)
        #expect(result.refused.isEmpty)
        #expect(roster.pending.isEmpty)
        #expect(roster.digest == source.roster.digest)
        #expect(RosterView(roster, from: Self.b.deviceKey, signingKey: Self.b.signing.publicKey) == source.view(from: Self.b))

        // Every record at once, children first: the same roster.
        let reversed = Roster(records: source.roster.records.reversed())
        #expect(reversed.count == source.roster.count)
        #expect(reversed.digest == source.roster.digest)
        #expect(RosterView(reversed, from: Self.a.deviceKey, signingKey: Self.a.signing.publicKey) == source.view(from: Self.a))
        let again = roster.merge(source.roster.records)
        #expect(again.added == 0 && again.refused.isEmpty)
    }

    @Test func atMostSoManyRecordsWaitForParentsAndTheOldestGoFirst() throws {
        var roster = Roster()
        var orphans: [RosterRecord] = []
        for index in 0...Roster.maximumPending {
            let missing = PairingSupport.sha256([UInt8(index & 0xFF), UInt8(index >> 8)])
            orphans.append(try RosterRecord.make(kind: .rotate, parents: [missing], signer: Self.a.signing, time: Int64(index)))
        }
        for orphan in orphans { #expect(roster.insert(orphan) == .pending) }
        #expect(roster.pending.count == Roster.maximumPending)
        #expect(roster.pending.first == orphans[1])
        #expect(roster.pending.last == orphans.last)
    }

    /// A device can sign only once its signing key is bound to it in the record's own past:
    /// B's rename that does not have B's add (or genesis) as an ancestor is refused.
    @Test func aRecordWhoseAuthorIsNotBoundInItsPastIsRefused() throws {
        var builder = RosterBuilder()
        let genesis = try builder.genesis(Self.a)
        let add = try builder.add(Self.a, Self.b)
        let early = try RosterRecord.make(kind: .rename, parents: [genesis.hash], signer: Self.b.signing, time: 1, name: "early")
        guard case .refused = builder.roster.insert(early) else {
            Issue.record("a rename by B without B's add in its past was not refused")
            return
        }
        // A key never bound at all.
        let stranger = try RosterRecord.make(kind: .remove, parents: [add.hash], signer: Self.c.signing, time: 1,
                                             subject: Self.a.deviceKey)
        guard case .refused = builder.roster.insert(stranger) else {
            Issue.record("a removal by an unbound key was not refused")
            return
        }
        #expect(builder.roster.count == 2)
        try builder.rename(Self.b, "late")  // with the add in its past
        #expect(builder.view(from: Self.a).members[Self.b.id]?.name == "late")
    }

    /// A record refused once its parents arrived is reported once, not at every later merge.
    @Test func aPendingRecordRefusedWhenItsParentsArriveIsReportedOnce() throws {
        var builder = RosterBuilder()
        let genesis = try builder.genesis(Self.a)
        try builder.add(Self.a, Self.b)
        let rename = try RosterRecord.make(kind: .rename, parents: [genesis.hash], signer: Self.a.signing, time: 5, name: "A")
        let unbound = try RosterRecord.make(kind: .rename, parents: [rename.hash], signer: Self.c.signing, time: 6, name: "C")
        #expect(builder.roster.insert(unbound) == .pending)
        let first = builder.roster.merge([rename])
        #expect(first.added == 1)
        #expect(first.refused.count == 1)
        let later = builder.roster.merge([])
        #expect(later.refused.isEmpty)
        #expect(!builder.roster.pending.contains(unbound))
    }

    /// More than 16 concurrent records: a new record names the 16 deepest, and the next one the rest.
    @Test func headsAreBoundedAndNoneIsLeftBehind() throws {
        var builder = RosterBuilder()
        try builder.genesis(Self.a)
        let base = builder.roster.heads
        var concurrent: [RosterRecord] = []
        for index in 0..<20 { concurrent.append(try builder.rename(Self.a, "A \(index)", parents: base)) }
        #expect(builder.roster.heads.count == RosterRecord.maximumParents)
        let heads = builder.roster.heads
        #expect(heads == heads.sorted { $0.lexicographicallyPrecedes($1) })
        let first = try builder.rotate(Self.a)
        #expect(first.parents.count == RosterRecord.maximumParents)
        let second = try builder.rotate(Self.a)
        let named = Set(first.parents + second.parents)
        #expect(concurrent.allSatisfy { named.contains($0.hash) })
        #expect(builder.roster.heads == [second.hash])
    }
}
