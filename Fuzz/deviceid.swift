@testable import MeshCrypto

// libFuzzer harness: DeviceID.parse on arbitrary text. A parsed ID must print back to text that
// parses to the same ID; everything else must be a CryptoError.
func fuzzDeviceID(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    if let id = try? DeviceID.parse(text) {
        guard let again = try? DeviceID.parse(id.description), again == id else {
            fatalError("a parsed device ID did not round-trip")
        }
        _ = id.short
    }
}
