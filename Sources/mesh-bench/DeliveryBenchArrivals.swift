import Foundation
import SessionMeshClient

extension DeliveryBenchRun {
    /// Round trips of a `status` request on the sender's connection (the local socket and the
    /// client library, no network), nanoseconds.
    func localRoundTrips(count: Int) async throws -> [UInt64] {
        var samples: [UInt64] = []
        for index in 0..<(count + 100) {
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try await sender.hello(client: "bench")
            if index >= 100 { samples.append(DispatchTime.now().uptimeNanoseconds &- start) }
        }
        return samples
    }
}

/// When each sequence arrived (monotonic ns), for the bench's own bookkeeping: an array indexed
/// by sequence, which the bench hands out from 1 upwards, so noting an arrival costs the
/// receiving app a store rather than a hash-table insert (and its growth); anything beyond
/// `arrayLimit` (not the bench's) goes to a dictionary.
struct Arrivals {
    static let arrayLimit: UInt64 = 1 << 24
    private var times: [UInt64] = []
    private var others: [UInt64: UInt64] = [:]
    /// Sequences that arrived.
    private(set) var count = 0

    subscript(sequence: UInt64) -> UInt64? {
        get {
            guard sequence < Self.arrayLimit else { return others[sequence] }
            let index = Int(sequence)
            return index < times.count && times[index] != 0 ? times[index] : nil
        }
        set {
            guard let newValue else { return }
            guard sequence < Self.arrayLimit else {
                if others.updateValue(newValue, forKey: sequence) == nil { count += 1 }
                return
            }
            let index = Int(sequence)
            if index >= times.count { times.append(contentsOf: repeatElement(0, count: max(index + 1 - times.count, times.count))) }
            if times[index] == 0 { count += 1 }
            times[index] = max(newValue, 1)
        }
    }
}

/// Runs `body`, or returns nil after `seconds` (cancelling it).
func withTimeout<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = try await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
