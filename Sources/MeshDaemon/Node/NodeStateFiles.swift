import Foundation
import MeshCrypto
#if canImport(Glibc)
import Glibc
#endif

/// What a node loads from its state folder before it runs: the device identity key
/// `identity.key` and the paired-device store.
struct NodeStateFiles {
    let identity: DeviceIdentity
    let store: PairedDeviceStore
    /// The paired devices as stored.
    let records: [PairedPeer]

    /// Loads (or creates) the identity and loads the store in `stateDirectory`; throws
    /// `NodeError` when either is unusable (a corrupt store is reported, never replaced, and
    /// a missing key is never replaced while devices are paired with it).
    init(stateDirectory: String) throws {
        try StateDirectory.prepare(stateDirectory)
        let store = PairedDeviceStore(stateDirectory: stateDirectory)
        do {
            records = try store.load()
        } catch {
            throw NodeError(code: .pairedDevices, message: error.description)
        }
        let keyPath = StateDirectory.path(stateDirectory, "identity.key")
        // A new key would silently orphan every pairing (peers know this device by its key):
        // only a state folder without paired devices may get a fresh identity.
        if !records.isEmpty, access(keyPath, F_OK) != 0, errno == ENOENT {
            throw NodeError(code: .identity, message: "the device identity key \(keyPath) is missing, but \(records.count) paired "
                + "device(s) know this device by it; restore it from a backup, or move \(store.path) aside to start as a new device and pair again")
        }
        do {
            identity = try DeviceIdentity.loadOrCreate(at: keyPath)
        } catch {
            throw NodeError(code: .identity, message: "cannot use the device identity key: \(error)")
        }
        self.store = store
    }
}
