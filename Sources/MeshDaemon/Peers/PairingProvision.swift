import MeshCrypto
import MeshCore

/// A pairing written into a state folder ahead of a daemon's start, in place of running the
/// pairing protocol: what the simulator gives each of its daemons (every pair of them shares a
/// pair key drawn from the run's seed).
package struct PairingProvision: Sendable {
    /// The peer's static public key (32 bytes).
    package var publicKey: [UInt8]
    /// The name the peer goes by.
    package var name: String
    /// The pair's psk (32 bytes, secret).
    package var pairKey: SecretBytes
    /// Where to dial the peer (`HOST:PORT`, stored as pairing addresses).
    package var addresses: [String]
    /// Pairing time, wall seconds (orders the file).
    package var pairedAt: Double

    package init(publicKey: [UInt8], name: String, pairKey: SecretBytes, addresses: [String], pairedAt: Double) {
        self.publicKey = publicKey
        self.name = name
        self.pairKey = pairKey
        self.addresses = addresses
        self.pairedAt = pairedAt
    }

    /// Writes `identity` as `identity.key` and `pairings` as the paired-device store of the
    /// state folder `stateDirectory` (created when missing), exactly as a daemon that paired
    /// would have left them. Throws when the folder or either file cannot be written, or the
    /// key file exists already.
    package static func write(identity: X25519KeyPair, pairings: [PairingProvision], stateDirectory: String) throws {
        try StateDirectory.prepare(stateDirectory)
        _ = try DeviceIdentity.create(at: StateDirectory.path(stateDirectory, "identity.key"), keyPair: identity)
        let records = pairings.map { pairing in
            PairedPeer(publicKey: pairing.publicKey, name: pairing.name, pairKey: pairing.pairKey,
                       addresses: pairing.addresses.map { PeerAddress(address: $0, source: .pairing) }, pairedAt: pairing.pairedAt)
        }
        try PairedDeviceStore(stateDirectory: stateDirectory).save(records)
    }
}
