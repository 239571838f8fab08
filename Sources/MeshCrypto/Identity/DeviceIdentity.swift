import MeshCore

/// This device's long-term identity: its static X25519 key pair and the device ID derived from it.
public struct DeviceIdentity: Sendable {
    /// The static key pair (the Noise `s` of every channel).
    public let keyPair: X25519KeyPair

    /// The fingerprint of ``keyPair``'s public key, as people read it.
    public var deviceID: DeviceID { DeviceID(publicKey: keyPair.publicKey) }

    /// Wraps an existing key pair (tests, or keys kept elsewhere).
    public init(keyPair: X25519KeyPair) {
        self.keyPair = keyPair
    }

    /// Writes `keyPair` as a new key file at `path` (mode 0600, atomic write), for a state folder
    /// made ahead of a daemon's start (the simulator provisions its daemons so). Throws
    /// ``CryptoError`` with code `keyFileIO` when the file exists already or cannot be written.
    package static func create(at path: String, keyPair: X25519KeyPair) throws -> DeviceIdentity {
        var encoded = KeyFile.encode(keyPair)
        defer { Sodium.zero(&encoded) }
        guard try KeyFile.createExclusively(path: path, bytes: encoded) else {
            throw CryptoError(.keyFileIO, "device key file \(path) exists already; it is never replaced")
        }
        return DeviceIdentity(keyPair: keyPair)
    }

    /// Loads the key file at `path`, or creates it (mode 0600, atomic write) when it does not exist.
    ///
    /// Throws ``CryptoError`` with code `insecureKeyFile` when the file is a symbolic link, not a
    /// regular file, owned by another user or accessible by group/others; `corruptKeyFile` when
    /// it is truncated or corrupt; `keyFileIO` when the directory is missing or not writable.
    /// An existing file is never replaced or modified, whatever its state.
    public static func loadOrCreate(at path: String) throws -> DeviceIdentity {
        // Two rounds: if another process creates the file between our read and our create,
        // load theirs instead of replacing it.
        for _ in 0..<2 {
            if var bytes = try KeyFile.read(path: path) {
                defer { Sodium.zero(&bytes) }
                return DeviceIdentity(keyPair: try KeyFile.decode(bytes, path: path))
            }
            let pair = X25519KeyPair.generate()
            var encoded = KeyFile.encode(pair)
            defer { Sodium.zero(&encoded) }
            if try KeyFile.createExclusively(path: path, bytes: encoded) {
                return DeviceIdentity(keyPair: pair)
            }
        }
        throw CryptoError(.keyFileIO, "device key file \(path) keeps appearing and disappearing; is another process deleting it?")
    }
}
