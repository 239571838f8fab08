@_exported import struct MeshCore.DeviceID
@_exported import struct MeshCore.DeviceIDError

extension DeviceID {
    /// The fingerprint of a static public key: the first 240 bits of its SHA-256.
    public init(publicKey: [UInt8]) {
        self.init(fingerprint: Array(Sodium.sha256(publicKey)[0..<Self.byteCount]))
    }
}
