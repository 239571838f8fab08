import Foundation
@testable import MeshDaemon

// libFuzzer harness `seenbatches`: the blob of event IDs stored per row of the `seen_batch` and
// `acked_batch` tables (16 bytes per ID), as `SeenBatches.decode` reads it back at open.
//
// A blob of any length (a damaged row included) decodes to its whole 16-byte IDs and ignores a
// partial tail; encoding them gives back the blob without that tail.
func fuzzSeenBatches(_ bytes: [UInt8]) {
    let ids = SeenBatches.decode(bytes)
    if ids.count != bytes.count / 16 { fuzzFailure("decoded \(ids.count) IDs from \(bytes.count) bytes") }
    if SeenBatches.encode(ids) != Array(bytes.prefix(ids.count * 16)) {
        fuzzFailure("IDs do not encode back to the blob")
    }
}
