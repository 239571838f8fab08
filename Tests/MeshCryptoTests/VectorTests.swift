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

    /// A scalar is an integer: y and y + k·L (here ≥ 2^255, bit 255 set) give the same shares and
    /// keys. libsodium's scalar multiplication ignores bit 255, so before, Ya, Yb, K and both
    /// ISKs came out wrong for such a vector.
    @Test func cpaceScalarsAreReducedModuloTheGroupOrder() throws {
        let report = try CPaceVectorRunner.run(fileContents: try Fixtures.vectorFile("cpace-unreduced-scalars"))
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

    /// The public vectors with `edit` applied to each vector object.
    private func editedNoiseVectors(_ edit: (inout [String: Any]) -> Void) throws -> [UInt8] {
        let file = try Fixtures.vectorFile("noise-25519-chachapoly-sha256")
        var root = try #require(try JSONSerialization.jsonObject(with: Data(file)) as? [String: Any])
        var vectors = try #require(root["vectors"] as? [[String: Any]])
        for index in vectors.indices { edit(&vectors[index]) }
        root["vectors"] = vectors
        return Array(try JSONSerialization.data(withJSONObject: root))
    }

    /// The vector format lets optional keys be "null or omitted entirely"; a null key is absent.
    @Test func nullOptionalKeysCountAsAbsent() throws {
        let contents = try editedNoiseVectors { vector in
            for side in ["init_", "resp_"] {
                for key in ["static", "ephemeral", "remote_static", "psks"] where vector[side + key] == nil {
                    vector[side + key] = NSNull()
                }
            }
            vector["handshake_hash"] = NSNull()
            vector["fallback_pattern"] = NSNull()
            vector["hybrid"] = NSNull()
        }
        let report = try NoiseVectorRunner.run(fileContents: contents)
        #expect(report.failures == [])
        #expect(report.passed == 59 && report.unsupported == 0)
    }

    /// A hybrid-forward-secrecy vector (`hybrid` key) is not run as its plain pattern.
    @Test func hybridVectorsAreUnsupported() throws {
        let contents = try editedNoiseVectors { $0["hybrid"] = "25519" }
        let report = try NoiseVectorRunner.run(fileContents: contents)
        #expect(report.unsupported == 59 && report.passed == 0 && report.failed == 0)
    }

    @Test func unsupportedProtocolsAreCountedNotFailed() throws {
        let text = String(decoding: try Fixtures.vectorFile("noise-25519-chachapoly-sha256"), as: UTF8.self)
            .replacingOccurrences(of: "_25519_ChaChaPoly_SHA256\"", with: "_448_AESGCM_BLAKE2b\"")
        let report = try NoiseVectorRunner.run(fileContents: Array(text.utf8))
        #expect(report.unsupported > 0 && report.passed == 0 && report.failed == 0)
        #expect(!report.isSuccess)
    }
}
