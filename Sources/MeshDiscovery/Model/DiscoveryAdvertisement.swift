/// What this device publishes over mDNS: a `_sessionmesh._udp` service instance.
///
/// Everything here is public on the local network, so it carries nothing secret: the
/// instance name a person recognises, the daemon's port, and in TXT the protocol version,
/// a short hint of the device ID (so a peer can pick the right instance before the
/// handshake proves identity) and, only while a pairing code is live, a public pairing hint.
/// The TXT layout is ``DiscoveryTXTRecord``.
public struct DiscoveryAdvertisement: Sendable, Equatable {
    /// The DNS-SD instance name, e.g. `alice-laptop`. 1…63 UTF-8 bytes, no control characters.
    public let instanceName: String
    /// The daemon's UDP/TCP port (not 0).
    public let port: UInt16
    /// Short, non-secret device-ID hint: 1…16 ASCII letters or digits (normally 8).
    public let deviceIDHint: String
    /// A public hint that this device accepts a pairing now; `nil` when no code is live.
    /// 0…32 ASCII letters, digits, `-` or `_`. Must carry nothing secret: the daemon uses the
    /// code's public hint (`PairingCode.publicHint`, its first two characters, drawn
    /// independently of the secret rest), never anything computed from the secret.
    public let pairingHint: String?

    /// Number of device-ID characters put in the hint.
    public static let deviceIDHintLength = 8

    /// Creates a validated advertisement.
    ///
    /// - Throws: ``DiscoveryError/Code/invalidAdvertisement`` naming the field that is wrong.
    public init(instanceName: String, port: UInt16, deviceIDHint: String,
                pairingHint: String? = nil) throws(DiscoveryError) {
        let nameBytes = instanceName.utf8.count
        guard nameBytes >= 1, nameBytes <= 63 else {
            throw DiscoveryError(code: .invalidAdvertisement,
                                 message: "instance name must be 1 to 63 UTF-8 bytes, got \(nameBytes)")
        }
        guard !instanceName.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw DiscoveryError(code: .invalidAdvertisement, message: "instance name contains a control character")
        }
        guard port != 0 else {
            throw DiscoveryError(code: .invalidAdvertisement, message: "port must not be 0; advertise the port the daemon listens on")
        }
        guard DiscoveryTXTRecord.isValidDeviceIDHint(deviceIDHint) else {
            throw DiscoveryError(code: .invalidAdvertisement,
                                 message: "device-ID hint must be 1 to 16 ASCII letters or digits")
        }
        if let pairingHint, !DiscoveryTXTRecord.isValidPairingHint(pairingHint) {
            throw DiscoveryError(code: .invalidAdvertisement,
                                 message: "pairing hint must be at most 32 ASCII letters, digits, '-' or '_'")
        }
        self.instanceName = instanceName
        self.port = port
        self.deviceIDHint = deviceIDHint
        self.pairingHint = pairingHint
    }

    /// The hint for a full device ID: its first ``deviceIDHintLength`` letters and digits
    /// (group separators dropped), upper-cased.
    public static func deviceIDHint(for deviceID: String) -> String {
        let kept = deviceID.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) }
        return String(String.UnicodeScalarView(kept.prefix(deviceIDHintLength))).uppercased()
    }

    /// The same advertisement with the pairing hint set (`hint`) or cleared (`nil`).
    ///
    /// - Throws: ``DiscoveryError/Code/invalidAdvertisement`` when `hint` has bad characters.
    public func withPairingHint(_ hint: String?) throws(DiscoveryError) -> DiscoveryAdvertisement {
        try DiscoveryAdvertisement(instanceName: instanceName, port: port, deviceIDHint: deviceIDHint, pairingHint: hint)
    }

    /// The TXT record this advertisement publishes.
    public var txtRecord: DiscoveryTXTRecord {
        DiscoveryTXTRecord(protocolVersion: DiscoveryTXTRecord.currentProtocolVersion,
                           deviceIDHint: deviceIDHint, pairingHint: pairingHint)
    }
}
