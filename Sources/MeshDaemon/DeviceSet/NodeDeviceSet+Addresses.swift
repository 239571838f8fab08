import MeshCore

/// Member addresses: what members pass on of where the others are (`member addresses`,
/// docs/PROTOCOL.md §12), learnt for members and held (bounded) for devices not yet members.
extension NodeDeviceSet {
    func learn(_ node: isolated MeshNode, _ addresses: [String], for id: DeviceID) {
        let usable = addresses.filter { (try? DaemonConfiguration.Endpoint(parsing: $0)) != nil }.prefix(8)
        guard !usable.isEmpty else { return }
        if var runtime = node.channels.peers[id] {
            var learnt = false
            for address in usable where runtime.record.learn(address: address, source: .member) { learnt = true }
            guard learnt else { return }
            node.channels.peers[id] = runtime
            if runtime.channel == nil { node.dialer.scheduleDial(node, id, immediately: true) }
        } else if view.removed[id] == nil {
            if heldAddresses[id] == nil, heldAddresses.count >= RosterView.maximumMembers { return }
            heldAddresses[id] = Array(usable)
        }
    }

    func sendAddresses(_ node: isolated MeshNode, to peer: DeviceID, only: [DeviceID]? = nil) {
        let ids = only ?? Array(node.channels.peers.keys)
        var entries: [DeviceSetMessage.MemberAddresses] = []
        for id in ids.sorted() where id != peer && view.members[id] != nil {
            guard let runtime = node.channels.peers[id] else { continue }
            let addresses = runtime.record.addresses.filter { $0.source != .member }.map(\.address)
            var seen = Set<String>()
            let unique = addresses.filter { $0.utf8.count <= DeviceSetMessage.maximumAddressBytes && seen.insert($0).inserted }
                .prefix(DeviceSetMessage.maximumAddressesPerMember)
            guard !unique.isEmpty else { continue }
            entries.append(.init(deviceKey: runtime.record.publicKey, addresses: Array(unique)))
            if entries.count == DeviceSetMessage.maximumAddressMembers { break }
        }
        guard !entries.isEmpty else { return }
        send(node, .memberAddresses(entries), to: peer)
    }
}
