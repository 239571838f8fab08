import MeshCore
import MeshCrypto

/// What `meshctl status` and `meshctl peers` show of the set.
extension NodeDeviceSet {
    /// `meshctl status`'s view of the set; nil when the set is off.
    var status: DeviceSetStatus? {
        guard enabled else { return nil }
        let removal = view.removed[ownID]
        return DeviceSetStatus(size: removal == nil ? max(1, view.members.count) : 0, records: roster.count,
                               digest: roster.digest.map { String(format: "%02x", $0) }.joined(),
                               removed: removal != nil,
                               removedBy: removal?.by.map { DeviceID(publicKey: $0).description },
                               removedAt: removal.map { Double($0.time) / 1e9 })
    }

    /// How `runtime`'s device came to be known, and the member that added it.
    func joined(_ record: PairedPeer) -> (text: String, addedBy: String?) {
        if !record.derived {
            // Not a member: paired --single here or on the other side (which then declines to join).
            let inSet = enabled && !record.single && view.members[record.deviceID] != nil
            return (inSet ? "paired here" : "paired here (single)", nil)
        }
        guard let by = view.members[record.deviceID]?.addedBy else { return ("added by the device set", nil) }
        let id = DeviceID(publicKey: by)
        let name = view.members[id]?.name ?? id.short
        return ("added by \(name)", id.description)
    }
}
