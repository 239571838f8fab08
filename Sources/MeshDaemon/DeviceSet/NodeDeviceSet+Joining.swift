import MeshCore
import MeshCrypto

/// Joining the set over a pairing: proposing an add to a paired device that is not a member
/// yet (docs/DEVICE-SET.md, "Joining"); countersigning a proposal is `acceptProposal`. A pairing
/// older than a removal of the device does neither (`removedSince`).
extension NodeDeviceSet {
    func proposeJoin(_ node: isolated MeshNode, _ peer: DeviceID) {
        guard !isRemoved, let runtime = node.channels.peers[peer], !runtime.record.derived, !runtime.record.single,
              view.members[peer] == nil, let connection = runtime.connection?.id, proposed[peer] != connection,
              !removedSince(pairing: runtime.record, of: runtime.record.publicKey) else { return }
        guard view.members.count < RosterView.maximumMembers else {
            node.logger.warning("the device set has 64 members; a paired device stays out of it", metadata: ["peer.id": "\(peer.short)"])
            return
        }
        // The peer's genesis names its signing key; it comes with the peer's records. Another
        // member may have forged geneses naming the peer's key: one proposal per candidate (the
        // peer countersigns only its own).
        let candidates = peerSigningKeys(of: runtime.record.publicKey)
        guard !candidates.isEmpty else { return }
        proposed[peer] = connection
        if proposed.count > 4 * RosterView.maximumMembers { proposed = [peer: connection] }
        // The peer needs this device's records (its genesis at least) before the proposal.
        sendAll(node, to: peer)
        for signingKey in candidates {
            guard let proposal = try? RosterRecord.make(kind: .add, parents: roster.heads, signer: signing, time: node.clock.wallNanoseconds(),
                                                        subject: runtime.record.publicKey, subjectSigningKey: signingKey,
                                                        name: Self.recordName(runtime.record.name)) else { continue }
            send(node, .joinProposal(proposal.encoded), to: peer)
        }
    }

    /// The signing key `deviceKey`'s own genesis binds to it, if this roster has it.
    private func peerSigningKeys(of deviceKey: [UInt8]) -> [[UInt8]] {
        Array(roster.records.filter { $0.kind == .genesis && $0.subject == deviceKey && $0.author != signing.publicKey }
            .map(\.author).prefix(4))
    }

    /// Whether this roster holds a removal of `deviceKey` made after `pairing` was: a pairing
    /// from before a removal never brings the device (back) into a set, whoever proposes it;
    /// only pairing again by code does.
    func removedSince(pairing: PairedPeer, of deviceKey: [UInt8]) -> Bool {
        roster.records.contains { $0.kind == .remove && $0.subject == deviceKey && Double($0.time) / 1e9 >= pairing.pairedAt }
    }
}
