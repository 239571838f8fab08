import Foundation
import Testing
@testable import MeshCrypto

@Suite struct VectorTests {
    @Test func noiseVectorsAllPass() throws {
        let report = try NoiseVectorRunner.run(fileContents: try Fixtures.vectorFile("noise-25519-chachapoly-sha256"))
        #expect(report.failures == [])
        #expect(report.failed == 0)
        #expect(report.passed >= 35)
        #expect(report.unsupported == 0)
    }

    @Test func cpaceVectorPasses() throws {
        let report = try CPaceVectorRunner.run(fileContents: try Fixtures.vectorFile("cpace-ristretto255-sha512"))
        #expect(report.failures == [])
        #expect(report.passed == 1)
    }

    @Test func corruptedExpectationIsReportedAsFailure() throws {
        var text = String(decoding: try Fixtures.vectorFile("cpace-ristretto255-sha512"), as: UTF8.self)
        text = text.replacingOccurrences(of: "\"K_hex\": \"80", with: "\"K_hex\": \"81")
        let report = try CPaceVectorRunner.run(fileContents: Array(text.utf8))
        #expect(report.failed == 1)
        #expect(report.failures.first?.contains("K_hex") == true)
    }

    @Test func garbageFileIsAClearError() {
        #expect(throws: CryptoError.self) { try NoiseVectorRunner.run(fileContents: Array("{not json".utf8)) }
        #expect(throws: CryptoError.self) { try CPaceVectorRunner.run(fileContents: Array("[1,2".utf8)) }
    }
}

@Suite struct VectorFormatTests {
    @Test func noiseCFormatWithNameFieldRuns() throws {
        let text = String(decoding: try Fixtures.vectorFile("noise-25519-chachapoly-sha256"), as: UTF8.self)
            .replacingOccurrences(of: "\"protocol_name\"", with: "\"name\"")
        let report = try NoiseVectorRunner.run(fileContents: Array(text.utf8))
        #expect(report.failed == 0)
        #expect(report.passed >= 35)
    }

    @Test func unsupportedProtocolsAreCountedNotFailed() throws {
        let text = String(decoding: try Fixtures.vectorFile("noise-25519-chachapoly-sha256"), as: UTF8.self)
            .replacingOccurrences(of: "_25519_ChaChaPoly_SHA256\"", with: "_448_AESGCM_BLAKE2b\"")
        let report = try NoiseVectorRunner.run(fileContents: Array(text.utf8))
        #expect(report.unsupported > 0 && report.passed == 0 && report.failed == 0)
        #expect(!report.isSuccess)
    }
}
