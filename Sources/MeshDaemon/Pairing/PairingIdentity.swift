/// Who this device is, as pairing exchanges it: its static X25519 public key and its name.
///
/// Pairing sends it only after both key confirmations succeeded, sealed under a key derived
/// from the CPace session key, so an eavesdropper or a wrong-code guesser never sees it.
/// A name is 1...64 UTF-8 bytes without control or bidirectional-override characters (it is
/// printed on the other device's terminal).
public struct PairingIdentity: Sendable, Equatable {
    /// The device's static X25519 public key (32 bytes).
    public var publicKey: [UInt8]
    /// The device's human-readable name.
    public var name: String

    /// Creates an identity. Validation happens when pairing starts
    /// (``PairingJoiner/init(code:identity:)``, ``PairingInvitationState/beginAttempt(at:identity:)``).
    public init(publicKey: [UInt8], name: String) {
        self.publicKey = publicKey
        self.name = name
    }

    /// Why `name` cannot be sent in pairing, or `nil` when it can.
    public static func problem(withName name: String) -> String? {
        let bytes = name.utf8.count
        if bytes == 0 { return "the device name is empty" }
        if bytes > PairingProtocol.maximumNameBytes {
            return "the device name is \(bytes) bytes of UTF-8; the limit is \(PairingProtocol.maximumNameBytes)"
        }
        for scalar in name.unicodeScalars where isForbidden(scalar) {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "the device name contains the control character U+\(hex)"
        }
        return nil
    }

    /// Why `publicKey` cannot be used, or `nil` when it can.
    static func problem(withPublicKey key: [UInt8]) -> String? {
        if key.count != PairingProtocol.publicKeyBytes {
            return "the public key is \(key.count) bytes; it must be \(PairingProtocol.publicKeyBytes)"
        }
        if key.allSatisfy({ $0 == 0 }) { return "the public key is all zero" }
        return nil
    }

    /// Throws ``PairingError/invalidIdentity(_:)`` when this identity cannot be sent.
    func validated() throws(PairingError) -> PairingIdentity {
        if let problem = Self.problem(withPublicKey: publicKey) { throw .invalidIdentity(problem) }
        if let problem = Self.problem(withName: name) { throw .invalidIdentity(problem) }
        return self
    }

    /// C0/C1 controls, DEL, line/paragraph separators and bidi controls: anything that could
    /// rewrite what a terminal shows next to the name.
    private static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00 ... 0x1F, 0x7F ... 0x9F: return true
        case 0x2028, 0x2029: return true
        case 0x061C, 0x200E, 0x200F, 0x202A ... 0x202E, 0x2066 ... 0x2069: return true
        default: return false
        }
    }
}

extension PairingIdentity {
    /// Bytes of the sealed identity plaintext: key, name length, name zero-padded to the limit
    /// (fixed size, so the ciphertext does not reveal the name's length).
    ///
    ///     +------------------+-------------+---------------------------------+
    ///     | public key (32)  | name len(1) | name UTF-8, zero-padded (64)    |
    ///     +------------------+-------------+---------------------------------+
    static let plaintextBytes = PairingProtocol.publicKeyBytes + 1 + PairingProtocol.maximumNameBytes

    /// The fixed-size plaintext for a validated identity.
    func paddedPlaintext() -> [UInt8] {
        let name = Array(self.name.utf8)
        var out = publicKey
        out.append(UInt8(name.count))
        out += name
        out += [UInt8](repeating: 0, count: PairingProtocol.maximumNameBytes - name.count)
        return out
    }

    /// Parses and validates the peer's identity plaintext; `message` names where it came from.
    init(paddedPlaintext bytes: [UInt8], in message: PairingMessageType) throws(PairingError) {
        guard bytes.count == Self.plaintextBytes else {
            throw .malformed("\(message): identity is \(bytes.count) bytes, expected \(Self.plaintextBytes)")
        }
        let key = Array(bytes[0 ..< PairingProtocol.publicKeyBytes])
        if let problem = Self.problem(withPublicKey: key) { throw .malformed("\(message): \(problem)") }
        let nameLength = Int(bytes[PairingProtocol.publicKeyBytes])
        guard nameLength <= PairingProtocol.maximumNameBytes else {
            throw .malformed("\(message): name length \(nameLength) exceeds \(PairingProtocol.maximumNameBytes)")
        }
        let nameStart = PairingProtocol.publicKeyBytes + 1
        let nameBytes = bytes[nameStart ..< nameStart + nameLength]
        guard bytes[(nameStart + nameLength)...].allSatisfy({ $0 == 0 }) else {
            throw .malformed("\(message): non-zero padding after the name")
        }
        guard let name = String(validating: nameBytes, as: UTF8.self) else {
            throw .malformed("\(message): the name is not valid UTF-8")
        }
        if let problem = Self.problem(withName: name) { throw .malformed("\(message): \(problem)") }
        self.init(publicKey: key, name: name)
    }
}
