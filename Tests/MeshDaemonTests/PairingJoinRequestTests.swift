import MeshCrypto
import MeshCore
import Testing
@testable import MeshDaemon

/// A join request is checked before anything is sent.
@Suite("Pairing join request")
struct PairingJoinRequestTests {
    @Test("a well-formed code with and without an address")
    func accepted() throws {
        let code = PairingCode.generate()
        let direct = try PairingJoinRequest(code: code.description, address: "127.0.0.1:47470")
        #expect(direct.code == code)
        #expect(direct.endpoint?.description == "127.0.0.1:47470")
        let byHint = try PairingJoinRequest(code: code.description.lowercased(), address: nil)
        #expect(byHint.code == code)
        #expect(byHint.endpoint == nil)
    }

    @Test("a mistyped code is invalid-code; a bad address says what is wrong with it")
    func refused() {
        let typo = #expect(throws: MeshError.self) { try PairingJoinRequest(code: "7KQ4-MX9", address: nil) }
        #expect(typo?.kind == .invalidCode)
        let code = PairingCode.generate().description
        let noPort = #expect(throws: MeshError.self) { try PairingJoinRequest(code: code, address: "127.0.0.1") }
        #expect(noPort?.kind == .invalidArgument)
        #expect(noPort?.message.hasPrefix("--address: ") == true)
        let badPort = #expect(throws: MeshError.self) { try PairingJoinRequest(code: code, address: "127.0.0.1:70000") }
        #expect(badPort?.kind == .invalidArgument)
    }
}
