import Foundation
import MeshLocalAPI
@testable import MeshDaemon

// libFuzzer harness `paireddevices`: the state file `paired-devices.json`.
//
// The input is written (mode 0600) as the store file of a state folder and loaded with
// `PairedDeviceStore.load`, as a starting node does. A list that loads is saved and loaded again
// and must come back the same; anything else must be a `PeerStoreError`.
func fuzzPairedDevices(_ bytes: [UInt8]) {
    let store = PairedDeviceStore(stateDirectory: FuzzFiles.folder)
    guard FileManager.default.createFile(atPath: store.path, contents: Data(bytes),
                                         attributes: [.posixPermissions: 0o600]) else {
        fuzzFailure("cannot write \(store.path)")
    }
    guard let peers = try? store.load() else { return }
    do {
        try store.save(peers)
        let again = try store.load()
        guard again.map(\.deviceID) == peers.map(\.deviceID), again.map(\.name) == peers.map(\.name),
              again.map(\.addresses) == peers.map(\.addresses) else {
            fuzzFailure("a loaded device list changed when saved and loaded again")
        }
    } catch {
        fuzzFailure("a loaded device list could not be saved and loaded again: \(error)")
    }
}
