/// The DNS-SD TXT data of a `_sessionmesh._udp` service.
///
/// ```
///  TXT strings (each one length-prefixed on the wire, RFC 6763 §6):
///  ┌──────────┬───────────────┬──────────────────────┐
///  │ "v=1"    │ "id=ABCD2345" │ "pair=<public hint>" │   pair=… only while a code is live
///  └──────────┴───────────────┴──────────────────────┘
/// ```
/// Parsing is lenient, as RFC 6763 §6.4 asks: keys are case-insensitive, the first occurrence
/// of a key wins, unknown keys are ignored, and a malformed value reads as absent — a hostile
/// record can never make parsing fail or trap.
public struct DiscoveryTXTRecord: Sendable, Equatable {
    /// The protocol version this build speaks and advertises.
    public static let currentProtocolVersion = 1

    /// `v=`: protocol version, when present and a small decimal number.
    public var protocolVersion: Int?
    /// `id=`: short device-ID hint, when present and well-formed.
    public var deviceIDHint: String?
    /// `pair=`: public pairing hint; non-nil means the device accepts a pairing now.
    public var pairingHint: String?

    /// Creates a record from its fields.
    public init(protocolVersion: Int?, deviceIDHint: String?, pairingHint: String?) {
        self.protocolVersion = protocolVersion
        self.deviceIDHint = deviceIDHint
        self.pairingHint = pairingHint
    }

    /// True while the advertiser accepts a pairing (`pair=` is present).
    public var acceptsPairing: Bool { pairingHint != nil }

    /// The TXT strings in publishing order: `v=`, `id=`, then `pair=` when set.
    public var strings: [String] {
        var out: [String] = []
        if let protocolVersion { out.append("v=\(protocolVersion)") }
        if let deviceIDHint { out.append("id=\(deviceIDHint)") }
        if let pairingHint { out.append("pair=\(pairingHint)") }
        return out
    }

    /// Parses raw TXT strings as received from the network. Never fails: what cannot be read
    /// is treated as absent. At most 64 strings are looked at.
    public init(parsing entries: [[UInt8]]) {
        var seen = Set<String>()
        var version: Int?
        var hint: String?
        var pairing: String?
        for entry in entries.prefix(64) {
            guard let eq = entry.firstIndex(of: UInt8(ascii: "=")), eq > 0, eq <= 16 else { continue }
            guard entry[..<eq].allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else { continue }
            let key = String(decoding: entry[..<eq], as: UTF8.self).lowercased()
            guard seen.insert(key).inserted else { continue }
            let valueBytes = entry[(eq + 1)...]
            guard valueBytes.count <= 64, valueBytes.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E }) else { continue }
            let value = String(decoding: valueBytes, as: UTF8.self)
            switch key {
            case "v":
                if value.count <= 4, value.allSatisfy(\.isASCIIDigit) { version = Int(value) }
            case "id":
                if Self.isValidDeviceIDHint(value) { hint = value }
            case "pair":
                if Self.isValidPairingHint(value) { pairing = value }
            default:
                continue
            }
        }
        self.init(protocolVersion: version, deviceIDHint: hint, pairingHint: pairing)
    }

    /// Parses TXT strings given as text (tests, `avahi-browse` output).
    public init(parsingStrings entries: [String]) {
        self.init(parsing: entries.map { Array($0.utf8) })
    }

    /// 1…16 ASCII letters or digits.
    static func isValidDeviceIDHint(_ value: String) -> Bool {
        (1...16).contains(value.utf8.count) && value.allSatisfy { $0.isASCIILetterOrDigit }
    }

    /// 0…32 ASCII letters, digits, `-` or `_`.
    static func isValidPairingHint(_ value: String) -> Bool {
        value.utf8.count <= 32 && value.allSatisfy { $0.isASCIILetterOrDigit || $0 == "-" || $0 == "_" }
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && ("0"..."9").contains(self) }
    var isASCIILetterOrDigit: Bool { isASCII && (isLetter || isNumber) }
}
