import Testing
@testable import MeshDiscovery

@Suite("TXT record and advertisement")
struct TXTRecordTests {
    @Test("an advertisement publishes v=1, the device hint, and pair= only while pairing")
    func encoding() throws {
        let plain = try DiscoveryAdvertisement(instanceName: "alice laptop", port: 47_470, deviceIDHint: "ABCD2345")
        #expect(plain.txtRecord.strings == ["v=1", "id=ABCD2345"])
        let pairing = try plain.withPairingHint("k7-Q")
        #expect(pairing.txtRecord.strings == ["v=1", "id=ABCD2345", "pair=k7-Q"])
        #expect(try pairing.withPairingHint(nil) == plain)
    }

    @Test("the device hint is the first 8 letters or digits of the device ID")
    func deviceHint() {
        #expect(DiscoveryAdvertisement.deviceIDHint(for: "mfzw-gq3t-kxyz-2345") == "MFZWGQ3T")
        #expect(DiscoveryAdvertisement.deviceIDHint(for: "ab") == "AB")
    }

    @Test("parsing round-trips what we publish")
    func roundTrip() throws {
        let ad = try DiscoveryAdvertisement(instanceName: "b", port: 1, deviceIDHint: "XYZ", pairingHint: "h_1")
        let parsed = DiscoveryTXTRecord(parsingStrings: ad.txtRecord.strings)
        #expect(parsed == ad.txtRecord)
        #expect(parsed.acceptsPairing)
    }

    @Test("parsing is lenient: case-insensitive keys, first wins, junk ignored", arguments: [
        (["V=1", "ID=abc", "id=zzz"], DiscoveryTXTRecord(protocolVersion: 1, deviceIDHint: "abc", pairingHint: nil)),
        (["v=x", "id=has space", "pair=bad!"], DiscoveryTXTRecord(protocolVersion: nil, deviceIDHint: nil, pairingHint: nil)),
        (["=1", "noequals", "v=12345", "pair="], DiscoveryTXTRecord(protocolVersion: nil, deviceIDHint: nil, pairingHint: "")),
        (["other=thing", "v=2"], DiscoveryTXTRecord(protocolVersion: 2, deviceIDHint: nil, pairingHint: nil)),
    ])
    func lenientParsing(strings: [String], expected: DiscoveryTXTRecord) {
        #expect(DiscoveryTXTRecord(parsingStrings: strings) == expected)
    }

    @Test("hostile bytes never trap and read as absent")
    func hostileBytes() {
        let entries: [[UInt8]] = [
            [0xFF, 0x3D, 0x31], Array("id=".utf8) + [0x00, 0x41], Array("pair=".utf8) + Array(repeating: 0x41, count: 300),
            [], Array(repeating: 0x3D, count: 5),
        ]
        let parsed = DiscoveryTXTRecord(parsing: entries + Array(repeating: Array("v=1".utf8), count: 1000))
        #expect(parsed.deviceIDHint == nil)
        #expect(parsed.pairingHint == nil)
        #expect(parsed.protocolVersion == 1)
    }

    @Test("invalid advertisements are refused with a reason", arguments: [
        ("", UInt16(1), "ABC", String?.none),
        (String(repeating: "x", count: 64), 1, "ABC", nil),
        ("ok", 0, "ABC", nil),
        ("ok", 1, "", nil),
        ("ok", 1, "AB-C", nil),
        ("ok", 1, "ABC", "the code 123 456"),
        ("tab\there", 1, "ABC", nil),
    ])
    func invalidAdvertisement(name: String, port: UInt16, hint: String, pairing: String?) {
        #expect(throws: DiscoveryError.self) {
            _ = try DiscoveryAdvertisement(instanceName: name, port: port, deviceIDHint: hint, pairingHint: pairing)
        }
    }
}
