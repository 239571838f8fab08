import Foundation
import Testing
@testable import MeshDaemon

/// A store file whose schema version was altered (negative, or reset to 0 over existing tables)
/// is refused with a clear error and left as it was: it used to crash meshd (index out of range
/// in the migration list) or fail with "table already exists".
@Suite("DeliveryStore with an altered header")
struct StoreAlteredHeaderTests {
    @Test(arguments: [-1, 0, Int64.min])
    func anAlteredSchemaVersionIsRefusedAndTheFileKept(version: Int64) throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        try store.outbox.enqueue(peer: "A", item: makeOutboxItem(1))
        store.close()
        let raw = try SQLiteConnection(path: dir.path(), busyTimeoutMilliseconds: 100)
        try raw.execute("PRAGMA user_version = \(version)", "test setup")
        raw.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: dir.path()))

        let error = #expect(throws: StoreError.self) { try DeliveryStore.open(path: dir.path()) }
        #expect(error?.code == .incompatible)
        #expect(error.map { "\($0)" }?.contains("does not match the file's tables") == true, "\(String(describing: error))")
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path())) == before)
    }
}
