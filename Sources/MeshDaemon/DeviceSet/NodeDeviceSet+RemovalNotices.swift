import MeshCrypto
import MeshCore

/// Removal notices (`RemovalNotice`): a device removed while away asks silent members, and a
/// member that removed it answers with the roster.
extension NodeDeviceSet {
    /// Members of the set that have had no channel since this daemon started (or for a while)
    /// are asked, at most every 30 s each, whether they removed it.
    func queryRemovalsIfDue(_ node: isolated MeshNode, now: UInt64) {
        guard !isRemoved, now &- node.startedAt >= Self.silentBeforeQuery else { return }
        for (id, runtime) in node.channels.peers.sorted(by: { $0.key < $1.key })
        where runtime.channel == nil && (runtime.record.derived || (!runtime.record.single && view.members[id] != nil)) {
            if let last = lastQueried[id], now &- last < Self.queryInterval { continue }
            let addresses = runtime.record.addresses.compactMap { try? DaemonConfiguration.Endpoint(parsing: $0.address) }
            guard !addresses.isEmpty else { continue }
            lastQueried[id] = now
            node.jobQueue.yield(.removalQuery(peer: id, addresses: Array(addresses.prefix(3))))
        }
    }

    /// Asks `peer` at `addresses` (a job of its own); a reply is merged like any records.
    static func query(_ node: MeshNode, _ peer: DeviceID, at addresses: [DaemonConfiguration.Endpoint]) async {
        guard let member = await node.hop({ $0.channels.peers[peer]?.record.publicKey }) else { return }
        for address in addresses {
            guard let frame = RemovalNotice.query(own: node.identity.keyPair, member: member, time: await node.hop({ $0.clock.wallNanoseconds() })),
                  let reply = try? await node.transport.dialStream(to: .host(address), kind: .removalQuery, timeout: .seconds(2), { path, frames in
                      try await path.write(try WireFrame.encode(frame))
                      guard case .frame(let body)? = try await frames.next() else { return nil as [UInt8]? }
                      return body
                  }) else { continue }
            guard let records = RemovalNotice.open(reply, own: node.identity.keyPair, member: member) else { return }
            await node.hop { $0.deviceSet.noticeReceived($0, records, from: peer) }
            return
        }
    }

    /// The reply to a removal query from an accepted connection; nil: close without a byte.
    func answerRemovalQuery(_ node: isolated MeshNode, _ frame: [UInt8]) -> [UInt8]? {
        guard enabled, node.phase == .running else { return nil }
        let now = node.clock.monotonicNanoseconds()
        answeredAt = answeredAt.filter { now &- $0 < 10_000_000_000 }
        guard answeredAt.count < Self.queryAnswersPer10s else { return nil }
        let reply = RemovalNotice.answer(frame, own: node.identity.keyPair, wall: node.clock.wallNanoseconds(),
                                         isRemoved: { view.removed[DeviceID(publicKey: $0)] != nil },
                                         records: { roster.records.map(\.encoded) })
        if reply != nil {
            answeredAt.append(now)
            node.counters.removalNoticesSent += 1
        }
        return reply
    }
}
