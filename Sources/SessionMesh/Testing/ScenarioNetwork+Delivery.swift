import Foundation

/// One message handed to a peer by a ``ScenarioNetwork``.
public struct ScenarioDelivery: Sendable {
    /// The sending peer.
    public var from: SessionPeer
    /// The receiving peer.
    public var to: SessionPeer
    /// The mode it was sent with.
    public var mode: SessionDeliveryMode
    /// What arrived (decoded from the bytes that crossed the network).
    public var message: SessionWireCodec.Message
    /// The virtual instant of arrival.
    public var deliveredAt: Date
}

extension ScenarioNetwork {
    /// Puts one copy per recipient in flight (`to == nil`: every other peer, in the order they joined).
    func enqueue(_ message: SessionWireCodec.Message, from: SessionPeer, to target: String?, mode: SessionDeliveryMode) throws {
        let bytes = try SessionWireCodec.encode(message)
        state.withLock { s in
            let recipients = target.map { [$0] } ?? s.peerOrder.filter { $0 != from.id }
            for recipient in recipients where recipient != from.id {
                guard s.peers[recipient] != nil else { continue }
                if Self.cut(s, from.id, recipient) {
                    s.statistics.partitioned += 1
                    continue
                }
                var copies = 1
                if s.conditions.duplicateProbability > 0 && Double.random(in: 0..<1, using: &s.random) < s.conditions.duplicateProbability {
                    copies = 2
                    s.statistics.duplicated += 1
                }
                for _ in 0..<copies {
                    if s.conditions.dropProbability > 0 && Double.random(in: 0..<1, using: &s.random) < s.conditions.dropProbability {
                        s.statistics.dropped += 1
                        continue
                    }
                    let lo = Self.nanos(s.conditions.minimumLatency), hi = Self.nanos(s.conditions.maximumLatency)
                    let latency = hi > lo ? Int64.random(in: lo...hi, using: &s.random) : lo
                    s.order += 1
                    s.statistics.sent += 1
                    s.inFlight.append(InFlight(order: s.order, deliverAt: s.nowNanos + latency, from: from, to: recipient, mode: mode, bytes: bytes))
                }
            }
        }
    }

    /// Advances the virtual clock to the next arrival and delivers it; `nil` when nothing is in
    /// flight. Copies lost to a partition at arrival time are skipped.
    public func deliverNext() -> ScenarioDelivery? {
        while true {
            let next = state.withLock { s -> (InFlight, ScenarioSessionSyncTransport?, Bool)? in
                guard let index = s.inFlight.indices.min(by: {
                    (s.inFlight[$0].deliverAt, s.inFlight[$0].order) < (s.inFlight[$1].deliverAt, s.inFlight[$1].order)
                }) else { return nil }
                let item = s.inFlight.remove(at: index)
                s.nowNanos = max(s.nowNanos, item.deliverAt)
                let lost = Self.cut(s, item.from.id, item.to)
                if lost { s.statistics.partitioned += 1 }
                return (item, s.peers[item.to], lost)
            }
            guard let (item, transport, lost) = next else { return nil }
            guard !lost, let transport else { continue }
            guard let message = try? SessionWireCodec.decode(item.bytes) else {
                state.withLock { $0.statistics.undecodable += 1 }
                continue
            }
            state.withLock { $0.statistics.delivered += 1 }
            let delivery = ScenarioDelivery(from: item.from, to: transport.localPeer, mode: item.mode, message: message, deliveredAt: now)
            transport.accept(delivery)
            return delivery
        }
    }

    /// The virtual instant of the next arrival, or `nil` when nothing is in flight. Lets a test
    /// deliver one message at a time up to a deadline, reacting to each before the next.
    public var nextArrival: Date? {
        state.withLock { s in s.inFlight.map(\.deliverAt).min().map { epoch.addingTimeInterval(Double($0) / 1e9) } }
    }

    /// Moves the virtual clock forward by `duration`, delivering everything due by then, in order.
    @discardableResult
    public func advance(by duration: Duration) -> [ScenarioDelivery] {
        let deadline = state.withLock { $0.nowNanos } + Self.nanos(duration)
        var delivered: [ScenarioDelivery] = []
        while state.withLock({ s in s.inFlight.contains { $0.deliverAt <= deadline } }), let d = deliverNext() {
            delivered.append(d)
        }
        state.withLock { $0.nowNanos = max($0.nowNanos, deadline) }
        return delivered
    }

    /// Delivers until nothing is in flight or `limit` deliveries were made; returns how many.
    @discardableResult
    public func runUntilIdle(limit: Int = 1_000_000) -> Int {
        var count = 0
        while count < limit, deliverNext() != nil { count += 1 }
        return count
    }

    static func nanos(_ d: Duration) -> Int64 {
        let (seconds, attos) = d.components
        return seconds &* 1_000_000_000 &+ attos / 1_000_000_000
    }
}
