import MeshCrypto
import MeshCore

/// A device this daemon is paired with, as the paired-device store keeps it.
///
/// `pairKey` is the Noise psk agreed while pairing: a secret, never logged, shown or sent.
struct PairedPeer: Sendable {
    /// The peer's static X25519 public key (32 bytes).
    var publicKey: [UInt8]
    /// The peer's name, as it gave it while pairing.
    var name: String
    /// The per-pair pre-shared key for the channel handshake.
    var pairKey: SecretBytes
    /// Where the peer can be reached, and how each address was learned.
    var addresses: [PeerAddress]
    /// When pairing completed, seconds since 1970 (wall clock).
    var pairedAt: Double
    /// The latest initiator timestamp (wall ns) of a channel handshake this device confirmed
    /// from the peer: a later message 1 must be stamped after it (a replayed one is refused),
    /// also after a restart. Nil until the first one.
    var handshakeTimestamp: Int64? = nil
    /// How the pairing exchange reached the peer (`PairingRoute`); nil in records written before
    /// it was kept.
    var pairedVia: PairingRoute? = nil
    /// Paired with `meshctl pair --single` (or with the device set off): this pairing never
    /// joins the two devices' sets.
    var single = false
    /// Not paired here: a member of the device set, whose pair key is derived
    /// (`DeviceSetKeys`). Never saved in the paired-device store.
    var derived = false
    /// A derived pair key of the roster's previous epoch, still accepted from the peer's
    /// handshakes (a member that has not yet heard of the latest removal).
    var previousPairKey: SecretBytes? = nil

    /// The peer's device ID (a fingerprint of `publicKey`).
    var deviceID: DeviceID { DeviceID(publicKey: publicKey) }

    /// Adds or refreshes an address; an address keeps its most specific source
    /// (static/pairing over observed). Returns whether anything changed.
    @discardableResult
    mutating func learn(address: String, source: AddressSource) -> Bool {
        if let index = addresses.firstIndex(where: { $0.address == address }) {
            guard addresses[index].source == .observed, source != .observed else { return false }
            addresses[index].source = source
            return true
        }
        addresses.append(PeerAddress(address: address, source: source))
        if addresses.count > PairedPeer.maximumAddresses {
            if let oldObserved = addresses.firstIndex(where: { $0.source == .observed }) {
                addresses.remove(at: oldObserved)
            } else {
                addresses.removeFirst()
            }
        }
        return true
    }

    /// Bound on remembered addresses per peer, so a roaming peer cannot grow the file forever.
    static let maximumAddresses = 8
}
