import Foundation
import MeshCrypto
import MeshCore

/// The file of paired devices: `paired-devices.json` in the state folder, mode `0600`.
///
/// ```json
/// {"version": 1, "devices": [{"deviceID": "…", "publicKey": "<base64>", "name": "…",
///   "pairKey": "<base64, secret>", "addresses": [{"address": "h:p", "source": "pairing"}],
///   "pairedAt": 1732233600.5, "handshakeTimestamp": 1732233700000000000}]}
/// ```
/// Every save replaces the whole file atomically (temp file, fsync, rename). A file that
/// cannot be parsed is an error at start-up and is never replaced or emptied: losing pair keys
/// silently would unpair every device without telling anyone.
struct PairedDeviceStore: Sendable {
    /// The file name inside the state folder.
    static let fileName = "paired-devices.json"

    /// Full path of the store file.
    let path: String

    /// A store in `stateDirectory`.
    init(stateDirectory: String) {
        path = (stateDirectory.hasSuffix("/") ? stateDirectory : stateDirectory + "/") + Self.fileName
    }

    private struct FileBody: Codable {
        var version: Int
        var devices: [Device]
    }

    private struct Device: Codable {
        var deviceID: String
        var publicKey: String
        var name: String
        var pairKey: String
        var addresses: [PeerAddress]
        var pairedAt: Double
        /// Absent in files written before it was kept, and until a first handshake.
        var handshakeTimestamp: Int64?
        /// How the pairing reached the device; absent in files written before it was kept.
        var pairedVia: String?
        /// `meshctl pair --single`: this pairing stays out of the device set; absent: false.
        var single: Bool?
    }

    /// Reads every paired device; an absent file means none.
    func load() throws(PeerStoreError) -> [PairedPeer] {
        let mode: UInt32?
        let contents: [UInt8]?
        do {
            mode = try AtomicFile.mode(path)
            contents = try AtomicFile.read(path)
        } catch {
            throw PeerStoreError(code: .io, path: path, detail: error.description)
        }
        guard var bytes = contents else { return [] }
        defer { PairingSupport.zero(&bytes) }
        if let mode, mode & 0o077 != 0 {
            throw PeerStoreError(code: .insecurePermissions, path: path,
                                 detail: "its mode is \(String(mode, radix: 8)), not 600")
        }
        // The pair keys are taken out of the bytes (and blanked there) before JSONDecoder
        // turns the rest into Strings.
        let pairKeys = PairKeyFields.extract(from: &bytes)
        let body: FileBody
        do {
            body = try JSONDecoder().decode(FileBody.self, from: Data(bytes))
        } catch {
            throw PeerStoreError(code: .corrupt, path: path, detail: "not valid JSON for a paired-device list")
        }
        guard pairKeys.count == body.devices.count else {
            throw PeerStoreError(code: .corrupt, path: path,
                                 detail: "\(pairKeys.count) pairKey fields for \(body.devices.count) devices")
        }
        guard body.version == 1 else {
            throw PeerStoreError(code: .corrupt, path: path, detail: "unsupported version \(body.version)")
        }
        var peers: [PairedPeer] = []
        for (index, device) in body.devices.enumerated() {
            guard let publicKey = Data(base64Encoded: device.publicKey), publicKey.count == 32 else {
                throw PeerStoreError(code: .corrupt, path: path, detail: "device \(index + 1) has a bad public key")
            }
            guard let pairKey = pairKeys[index], pairKey.count == 32 else {
                throw PeerStoreError(code: .corrupt, path: path, detail: "device \(index + 1) has a bad pair key")
            }
            let peer = PairedPeer(publicKey: [UInt8](publicKey), name: device.name, pairKey: pairKey,
                                  addresses: device.addresses, pairedAt: device.pairedAt,
                                  handshakeTimestamp: device.handshakeTimestamp,
                                  pairedVia: device.pairedVia.flatMap(PairingRoute.init(rawValue:)),
                                  single: device.single ?? false)
            guard peer.deviceID.description == device.deviceID else {
                throw PeerStoreError(code: .corrupt, path: path,
                                     detail: "device \(index + 1)'s ID does not match its public key")
            }
            peers.append(peer)
        }
        return peers
    }

    /// Replaces the file with `peers`.
    func save(_ all: [PairedPeer]) throws(PeerStoreError) {
        let peers = all.filter { !$0.derived }
        // Each pairKey is a random placeholder here; the keys' base64 is written over them in
        // the final byte buffer (PairKeyFields), so it never exists as a String.
        let placeholders = peers.indices.map { PairKeyFields.placeholder(index: $0, random: PairingSupport.randomBytes(count: 16)) }
        let body = FileBody(version: 1, devices: zip(peers, placeholders).map { peer, placeholder in
            Device(deviceID: peer.deviceID.description, publicKey: Data(peer.publicKey).base64EncodedString(),
                   name: peer.name, pairKey: placeholder,
                   // Addresses other members passed on are learnt again from them, never kept.
                   addresses: peer.addresses.filter { $0.source != .member }, pairedAt: peer.pairedAt,
                   handshakeTimestamp: peer.handshakeTimestamp,
                   pairedVia: peer.pairedVia?.rawValue, single: peer.single ? true : nil)
        })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        var data: Data
        do {
            data = try encoder.encode(body)
        } catch {
            throw PeerStoreError(code: .io, path: path, detail: "could not encode the device list")
        }
        var bytes = [UInt8](data)
        data.resetBytes(in: 0..<data.count)
        defer { PairingSupport.zero(&bytes) }
        guard PairKeyFields.splice(peers.map(\.pairKey), placeholders: placeholders, into: &bytes) else {
            throw PeerStoreError(code: .io, path: path, detail: "could not place the pair keys in the device list")
        }
        do {
            try AtomicFile.write(bytes, to: path)
        } catch {
            throw PeerStoreError(code: .io, path: path, detail: error.description)
        }
    }
}
