import MeshCore

/// The node's outstanding ping probes by id: whether each reply is still expected, already
/// came (before its prober began to wait), or is awaited. Bookkeeping only: `PingProber`
/// resumes the continuations it is handed.
struct PingProbes {
    typealias Waiter = CheckedContinuation<UInt64?, Never>

    private enum State {
        case expected
        case arrived(UInt64)
        case waiting(Waiter)
    }

    private var probes: [UInt32: (peer: DeviceID, state: State)] = [:]
    private var nextID: UInt32 = 1

    /// A new probe of `peer`: its id (carried by the request).
    mutating func start(peer: DeviceID) -> UInt32 {
        let id = nextID
        nextID &+= 1
        probes[id] = (peer, .expected)
        return id
    }

    /// The request of `id` could not be sent.
    mutating func cancel(_ id: UInt32) { probes.removeValue(forKey: id) }

    /// The prober of `id` waits: the arrival instant to resume it with at once (`.some`, nil
    /// inside when the probe is gone), or nil when `continuation` was stored until the reply or
    /// the timeout.
    mutating func wait(_ id: UInt32, continuation: Waiter) -> UInt64?? {
        switch probes[id]?.state {
        case .arrived(let at)?:
            probes.removeValue(forKey: id)
            return .some(at)
        case .expected?:
            probes[id]?.state = .waiting(continuation)
            return nil
        case .waiting?, nil:
            return .some(nil)
        }
    }

    /// A reply to `id` arrived at `at` (monotonic ns) from `peer`, or its probe timed out or
    /// failed (`at` nil; `peer` nil: any). The waiter to resume with `at`, if one waits.
    mutating func finish(_ id: UInt32, at: UInt64?, from peer: DeviceID?) -> Waiter? {
        guard let probe = probes[id] else { return nil }
        if let peer, probe.peer != peer { return nil }
        switch probe.state {
        case .expected:
            if let at { probes[id]?.state = .arrived(at) } else { probes.removeValue(forKey: id) }
            return nil
        case .arrived:
            if at == nil { probes.removeValue(forKey: id) }
            return nil
        case .waiting(let continuation):
            probes.removeValue(forKey: id)
            return continuation
        }
    }

    /// Ids of the probes of `peer` (nil: all).
    func ids(of peer: DeviceID?) -> [UInt32] {
        probes.compactMap { peer == nil || $0.value.peer == peer ? $0.key : nil }
    }
}
