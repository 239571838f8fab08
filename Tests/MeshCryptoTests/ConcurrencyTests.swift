import Foundation
import Testing
@testable import MeshCrypto

@Suite struct ConcurrencyTests {
    @Test func concurrentFirstUseOfLibsodiumIsSafe() async {
        let keys = await withTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<16 { group.addTask { X25519KeyPair.generate().publicKey } }
            return await group.reduce(into: [[UInt8]]()) { $0.append($1) }
        }
        #expect(Set(keys).count == 16)
    }

    @Test func racingCreatorsAllGetTheSameIdentity() throws {
        let dir = NSTemporaryDirectory() + "meshcrypto-race-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/device.key"
        let results = Results()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            results.append((try? DeviceIdentity.loadOrCreate(at: path))?.keyPair.publicKey)
        }
        let keys = results.values
        #expect(keys.count == 8 && keys.allSatisfy { $0 != nil })
        #expect(Set(keys.compactMap { $0 }).count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["device.key"])
    }

    final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [[UInt8]?] = []
        func append(_ value: [UInt8]?) { lock.withLock { stored.append(value) } }
        var values: [[UInt8]?] { lock.withLock { stored } }
    }
}
