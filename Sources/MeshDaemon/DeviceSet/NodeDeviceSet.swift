import MeshCrypto
import MeshCore
import NIOCore

/// The device set as the node runs it: the roster and its file, this device's signing key,
/// the join of directly paired devices into one set, gossip of records and member addresses
/// over channels, and the node's paired devices kept in step with the members
/// (docs/DEVICE-SET.md).
///
/// Owns its state; runs on the node's executor (every method that needs the node takes it
/// `isolated`). With `device_set = false` it keeps no roster and ignores what peers send.
final class NodeDeviceSet {
    let enabled: Bool
    let file: RosterFile
    let signing: SigningKeyPair
    let ownKey: [UInt8]
    let ownID: DeviceID
    private(set) var roster = Roster()
    private(set) var view = RosterView()
    /// The digest last written to the file.
    private var savedDigest: [UInt8] = []
    /// The roster changed since the last `save`.
    private var unsaved = false
    /// The last write of the roster failed.
    private var saveFailing = false
    /// Addresses members passed on for devices that are not (yet) members here, bounded.
    var heldAddresses: [DeviceID: [String]] = [:]
    /// Record verifications allowed per peer (a token bucket: a flood of records costs bounded CPU).
    private var verifyBudget: [DeviceID: (tokens: Double, at: UInt64)] = [:]
    /// The addresses of each member last passed on to the others.
    private var announced: [DeviceID: [String]] = [:]
    /// Whether this device's removal was logged already.
    private var removalLogged = false

    static let verificationsPerSecond = 256.0
    static let verificationBurst = 2048.0

    init(enabled: Bool, stateDirectory: String, identity: DeviceIdentity) throws {
        self.enabled = enabled
        file = RosterFile(stateDirectory: stateDirectory)
        signing = SigningKeyPair.derived(from: identity.keyPair)
        ownKey = identity.keyPair.publicKey
        ownID = identity.deviceID
        guard enabled else { return }
        do {
            let records = try file.load()
            let result = roster.merge(records)
            if !result.refused.isEmpty || roster.count != records.count {
                throw NodeError(code: .pairedDevices, message: "the roster \(file.path) holds records that do not fit together "
                    + "(\(records.count - roster.count) of \(records.count)); it is never replaced: move it aside to start the device set anew")
            }
        } catch let error as PeerStoreError {
            throw NodeError(code: .pairedDevices, message: error.description)
        }
        savedDigest = roster.count > 0 ? roster.digest : []
        view = RosterView(roster, from: ownKey, signingKey: signing.publicKey)
    }

    /// Whether this device was removed from its set.
    var isRemoved: Bool { enabled && view.isRemoved(ownID) }

    /// Members besides this device.
    /// In device ID order (a dictionary's order changes per process; the simulator replays seeds).
    var otherMembers: [RosterView.Member] { view.members.values.filter { $0.deviceKey != ownKey }.sorted { $0.id < $1.id } }
    /// The other members' device IDs (the view's keys: nothing derived from keys again).
    var otherMemberIDs: Set<DeviceID> { Set(view.members.keys).subtracting([ownID]) }

    // MARK: - Start and local changes

    /// At start: makes this device's genesis when it has none, then brings the paired devices
    /// in step with the roster.
    func start(_ node: isolated MeshNode) {
        guard enabled else { return }
        if !roster.records.contains(where: { $0.kind == .genesis && $0.author == signing.publicKey }) {
            if let genesis = try? RosterRecord.make(kind: .genesis, parents: [], signer: signing, time: node.clock.wallNanoseconds(),
                                                    subject: ownKey, name: Self.recordName(node.configuration.name)) {
                _ = roster.insert(genesis)
            }
        }
        apply(node)
    }

    /// `meshctl unpair` of a member: a removal record, applied here and sent to every member.
    /// False when `peer` is not a member of the set (the caller unpairs it as a single pair).
    ///
    /// A device paired here for the set that is not a member (its join still on the way, or
    /// it declined with `--single` on its side) is told as a single pair is (`unpaired`) and
    /// gets a removal record too, so that an add another member made of it does not bring it
    /// back.
    func remove(_ node: isolated MeshNode, _ peer: DeviceID) async -> Bool {
        guard enabled, !isRemoved, peer != ownID else { return false }
        if let record = node.channels.peers[peer]?.record, record.single, !record.derived { return false }
        let member = view.members[peer]
        if member == nil {
            guard node.channels.peers[peer] != nil, view.removed[peer] == nil else { return false }
            if let sent = node.sendStream(.unpaired, to: peer) { _ = try? await sent.get() }
        }
        guard let subject = member?.deviceKey ?? node.channels.peers[peer]?.record.publicKey,
              let record = try? RosterRecord.make(kind: .remove, parents: roster.heads, signer: signing,
                                                  time: node.clock.wallNanoseconds(), subject: subject),
              roster.insert(record) == .added else { return false }
        node.logger.info(member == nil ? "device removed from the device set before it joined" : "device removed from the device set",
                         metadata: ["peer.id": "\(peer.short)", "peer.name": "\(member?.name ?? "")"])
        // A member hears of it while it still has a channel here.
        if member != nil, let sent = tellRemoved(node, peer) { _ = try? await sent.get() }
        changed(node, new: [record], from: nil)
        if node.channels.peers[peer] != nil { node.removePeer(peer, reason: "unpaired on this device") }
        return true
    }

    // MARK: - Channels

    /// A channel to `peer` became active: say where this roster stands, pass on members'
    /// addresses, and propose to join `peer` when it is paired here but not in the set yet.
    func channelActivated(_ node: isolated MeshNode, _ peer: DeviceID) {
        guard enabled, speaks(node, peer) else { return }
        send(node, .rosterHead(digest: roster.digest, count: UInt16(roster.count)), to: peer)
        sendAddresses(node, to: peer)
        // Others learn where this peer is, when that changed.
        if let addresses = node.channels.peers[peer]?.record.addresses.map(\.address), announced[peer] != addresses {
            announced[peer] = addresses
            if announced.count > 4 * RosterView.maximumMembers { announced = [peer: addresses] }
            for other in node.channels.peers.keys.sorted() where other != peer && speaks(node, other) {
                sendAddresses(node, to: other, only: [peer])
            }
        }
        proposeJoin(node, peer)
    }

    /// A device set message from `peer`; false when the channel is gone afterwards.
    func received(_ node: isolated MeshNode, _ message: DeviceSetMessage, from peer: DeviceID) -> Bool {
        guard enabled else { return true }
        switch message {
        case .rosterHead(let digest, _):
            if digest != roster.digest { sendAll(node, to: peer) }
        case .rosterRecords(let encoded, let complete):
            var theirs = Set<[UInt8]>()
            var batch: [RosterRecord] = []
            for bytes in encoded {
                let hash = PairingSupport.sha256(bytes)
                theirs.insert(hash)
                guard !roster.contains(hash), spendVerification(node, peer) else { continue }
                if let record = try? RosterRecord.decode(bytes) { batch.append(record) } else { node.counters.rosterRecordsRefused += 1 }
            }
            let before = roster.count
            let result = roster.merge(batch)
            node.counters.rosterRecordsRefused += UInt64(result.refused.count)
            if result.added > 0 { changed(node, new: Array(roster.records[before...]), from: peer) }
            if complete {
                // The sender sent all it has: answer with what it lacks, once.
                if roster.records.contains(where: { !theirs.contains($0.hash) }) { sendAll(node, to: peer) }
            } else if !roster.pending.isEmpty {
                // New records whose parents are missing here: ask for everything.
                send(node, .rosterHead(digest: roster.digest, count: UInt16(roster.count)), to: peer)
            }
            // Its genesis may have come just now.
            proposeJoin(node, peer)
        case .joinProposal(let bytes):
            acceptProposal(node, bytes, from: peer)
        case .joinSigned(let bytes):
            guard let record = try? RosterRecord.decode(bytes), record.kind == .add, record.author == signing.publicKey,
                  record.subject == node.channels.peers[peer]?.record.publicKey else {
                node.counters.rosterRecordsRefused += 1
                return true
            }
            if roster.insert(record) == .added {
                node.logger.info("device joined the device set", metadata: ["peer.id": "\(peer.short)"])
                changed(node, new: [record], from: peer)
            }
        case .memberAddresses(let members):
            for member in members where member.deviceKey.count == 32 {
                let id = DeviceID(publicKey: member.deviceKey)
                guard id != ownID, id != peer else { continue }
                learn(node, member.addresses, for: id)
            }
        }
        return node.channels.peers[peer]?.channel != nil
    }

    // MARK: - Joining (the flow is in NodeDeviceSet+Joining.swift)

    /// Proposals sent, by peer, with the connection they went on (one per connection).
    var proposed: [DeviceID: UInt64] = [:]

    /// A member's proposal of this device: countersigned and sent back, unless it does not hold
    /// up or the pairing is older than a removal of this device.
    private func acceptProposal(_ node: isolated MeshNode, _ bytes: [UInt8], from peer: DeviceID) {
        guard let runtime = node.channels.peers[peer], !runtime.record.derived, !runtime.record.single,
              !removedSince(pairing: runtime.record, of: ownKey),
              let proposal = try? RosterRecord.decode(bytes, checkingSignatures: false),
              proposal.kind == .add, proposal.subject == ownKey, proposal.subjectSigningKey == signing.publicKey,
              SigningKeyPair.verify(proposal.authorSignature, of: RosterRecord.signedMessage(proposal.unsignedBytes),
                                    publicKey: proposal.author),
              roster.records.contains(where: { $0.kind == .genesis && $0.author == proposal.author && $0.subject == runtime.record.publicKey }),
              let signed = try? proposal.countersigned(by: signing)
        else {
            node.counters.rosterRecordsRefused += 1
            return
        }
        switch roster.insert(signed) {
        case .added, .duplicate:
            send(node, .joinSigned(signed.encoded), to: peer)
            node.logger.info("joined the device set of a paired device", metadata: ["peer.id": "\(peer.short)"])
            changed(node, new: [signed], from: peer)
        case .pending, .refused:
            node.counters.rosterRecordsRefused += 1
        }
    }

    // MARK: - Applying the roster

    /// The roster gained `new` (from `source`, or made here): apply it, pass the new records
    /// on to every other member with a channel, and tell them where new members are.
    func changed(_ node: isolated MeshNode, new: [RosterRecord], from source: DeviceID?) {
        let before = Set(view.members.keys)
        apply(node)
        let joined = view.members.keys.filter { !before.contains($0) && $0 != ownID }.sorted()
        for other in node.channels.peers.keys.sorted() where speaks(node, other) {
            if other != source { send(node, .rosterRecords(new.map(\.encoded), complete: false), to: other) }
            if !joined.isEmpty { sendAddresses(node, to: other, only: joined) }
        }
    }

    /// When all records last went to each peer (monotonic ns): at most once a second each, so
    /// a peer that keeps sending mismatching heads gets a bounded amount back.
    private var lastSentAll: [DeviceID: UInt64] = [:]
    /// Peers owed all records once their second is over (sent from the timer pass).
    private var owedAll: Set<DeviceID> = []

    func sendAll(_ node: isolated MeshNode, to peer: DeviceID) {
        let now = node.clock.monotonicNanoseconds()
        if let last = lastSentAll[peer], now &- last < 1_000_000_000 {
            owedAll.insert(peer)
            return
        }
        owedAll.remove(peer)
        lastSentAll[peer] = now
        if lastSentAll.count > 4 * RosterView.maximumMembers { lastSentAll = [peer: now] }
        send(node, .rosterRecords(roster.records.map(\.encoded), complete: true), to: peer)
    }

    /// Brings the node's paired devices in step with the roster: removed devices are
    /// forgotten (channel closed, pair key erased, queued data dropped), new members get a
    /// derived pair key and are dialled, derived keys follow the epoch. Saves the roster.
    func apply(_ node: isolated MeshNode) {
        guard enabled else { return }
        let before = view
        view = RosterView(roster, from: ownKey, signingKey: signing.publicKey)
        // A removal is written at once; other changes within the next timer pass (records lost
        // to a crash before then come back from the members at the next contact).
        unsaved = true
        if view.removed != before.removed { save(node) }
        if isRemoved {
            if !removalLogged {
                removalLogged = true
                let by = view.removed[ownID]?.by.map { DeviceID(publicKey: $0) }
                node.logger.warning("this device was removed from its device set; pair it again by code to come back",
                                    metadata: ["removed.by": "\(by?.short ?? "unknown")"])
            }
            for (id, runtime) in node.channels.peers.sorted(by: { $0.key < $1.key })
            where runtime.record.derived || (!runtime.record.single && before.members[id] != nil) {
                node.removePeer(id, reason: "this device was removed from the device set", bySet: true)
            }
            return
        }
        removalLogged = false
        for (id, removal) in view.removed.sorted(by: { $0.key < $1.key }) where id != ownID {
            guard let runtime = node.channels.peers[id] else { continue }
            // Paired again by code after the removal: it rejoins with its next channel's add.
            if !runtime.record.derived, runtime.record.pairedAt > Double(removal.time) / 1e9 { continue }
            let by = removal.by.map { DeviceID(publicKey: $0) }
            _ = tellRemoved(node, id)
            node.counters.devicesRemovedBySet += 1
            node.removePeer(id, reason: "removed from the device set by \(by.map { view.members[$0]?.name ?? $0.short } ?? "a member")",
                            bySet: true)
        }
        var added = false
        for member in otherMembers {
            let id = member.id
            guard let pairKey = DeviceSetKeys.pairKey(own: node.identity.keyPair, peer: member.deviceKey, epoch: view.epoch) else { continue }
            if var runtime = node.channels.peers[id] {
                guard runtime.record.derived else { continue }
                if runtime.record.pairKey != pairKey {
                    runtime.record.previousPairKey = runtime.record.pairKey
                    runtime.record.pairKey = pairKey
                }
                runtime.record.name = member.name
                node.channels.peers[id] = runtime
                continue
            }
            var record = PairedPeer(publicKey: member.deviceKey, name: member.name, pairKey: pairKey, addresses: [],
                                    pairedAt: node.clock.wallSeconds(), derived: true)
            for address in heldAddresses.removeValue(forKey: id) ?? [] { record.learn(address: address, source: .member) }
            node.channels.peers[id] = PeerRuntime(record: record, tuning: node.tuning, leaseSeconds: node.configuration.reachabilityLease)
            node.logger.info("device added to the device set", metadata: ["peer.id": "\(id.short)", "peer.name": "\(member.name)"])
            node.handOff.channelEvent(.memberAdded(id))
            node.dialer.scheduleDial(node, id, immediately: true)
            added = true
        }
        for (id, runtime) in node.channels.peers.sorted(by: { $0.key < $1.key })
        where runtime.record.derived && view.members[id] == nil && view.removed[id] == nil {
            node.removePeer(id, reason: "no longer in the device set", bySet: true)
        }
        if added {
            node.finder.matchPairedDevices(node)
            node.relayTransport?.pairedDevicesChanged()
        }
    }

    /// Sends `peer` (removed) the roster, so it learns of its removal; nil when no channel.
    func tellRemoved(_ node: isolated MeshNode, _ peer: DeviceID) -> EventLoopFuture<Void>? {
        guard speaks(node, peer) else { return nil }
        return node.sendStream(.deviceSet(.rosterRecords(roster.records.map(\.encoded), complete: true)), to: peer)
    }

    /// Writes the roster when it changed since the last write (the timer pass and the node's
    /// stop call it).
    func save(_ node: isolated MeshNode) {
        guard enabled, unsaved else { return }
        unsaved = false
        let digest = roster.digest
        guard digest != savedDigest else { return }
        do {
            try file.save(roster.records)
            savedDigest = digest
            saveFailing = false
        } catch {
            // Tried again at every timer pass; said once until a write succeeds.
            unsaved = true
            if !saveFailing { node.logger.error("could not save the roster; retrying", metadata: ["error": "\(error)"]) }
            saveFailing = true
        }
    }

    // MARK: - Removal notices (state; the flow is in NodeDeviceSet+RemovalNotices.swift)

    /// When each silent member was last asked whether it removed this device (monotonic ns).
    var lastQueried: [DeviceID: UInt64] = [:]
    /// Removal queries answered lately (monotonic ns), at most `queryAnswersPer10s` per 10 s.
    var answeredAt: [UInt64] = []
    static let queryInterval: UInt64 = 30_000_000_000
    static let silentBeforeQuery: UInt64 = 3_000_000_000
    static let queryAnswersPer10s = 16

    /// From the node's timer pass: the roster is written when it changed, records owed to
    /// peers go out, silent members are asked whether they removed this device.
    func timerPass(_ node: isolated MeshNode, now: UInt64) {
        guard enabled else { return }
        save(node)
        for peer in owedAll.sorted() {
            if node.channels.peers[peer]?.channel == nil { owedAll.remove(peer) } else { sendAll(node, to: peer) }
        }
        queryRemovalsIfDue(node, now: now)
    }

    /// The records a member sent back to a removal query, merged like any records.
    func noticeReceived(_ node: isolated MeshNode, _ encoded: [[UInt8]], from peer: DeviceID) {
        let batch = encoded.compactMap { try? RosterRecord.decode($0) }
        if roster.merge(batch).added > 0 { apply(node) }
    }

    // MARK: - Helpers

    func speaks(_ node: isolated MeshNode, _ peer: DeviceID) -> Bool {
        node.channels.peers[peer]?.channel?.peerSpeaksDeviceSet == true
    }

    @discardableResult
    func send(_ node: isolated MeshNode, _ message: DeviceSetMessage, to peer: DeviceID) -> Bool {
        node.sendStream(.deviceSet(message), to: peer) != nil
    }

    func spendVerification(_ node: isolated MeshNode, _ peer: DeviceID) -> Bool {
        let now = node.clock.monotonicNanoseconds()
        var bucket = verifyBudget[peer] ?? (Self.verificationBurst, now)
        bucket.tokens = min(Self.verificationBurst, bucket.tokens + Double(now &- bucket.at) / 1e9 * Self.verificationsPerSecond)
        bucket.at = now
        guard bucket.tokens >= 1 else {
            verifyBudget[peer] = bucket
            return false
        }
        bucket.tokens -= 1
        verifyBudget[peer] = bucket
        if verifyBudget.count > 4 * RosterView.maximumMembers { verifyBudget = [peer: bucket] }
        return true
    }

    /// A name as a record carries it: at most 64 bytes of UTF-8, cut at a character boundary.
    static func recordName(_ name: String) -> String {
        var out = ""
        for character in name {
            if out.utf8.count + String(character).utf8.count > RosterRecord.maximumNameBytes { break }
            out.append(character)
        }
        return out.isEmpty ? "device" : out
    }
}

