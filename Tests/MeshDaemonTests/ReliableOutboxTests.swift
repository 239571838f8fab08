import Foundation
import MeshCrypto
import Testing
@testable import MeshDaemon

/// The sending side of one peer's reliable stream, driven without an actor, loop or store:
/// entries stand for what the outbox held, `now` is plain nanoseconds.
struct ReliableOutboxTests {
    static let second: UInt64 = 1_000_000_000

    static func entries(_ sequences: ClosedRange<UInt64>, payload: Int = 10) -> [OutboxEntry] {
        sequences.map { sequence in
            let item = OutboxItem(eventID: UUID(), featureID: "demo", kind: 2, payload: Array(repeating: 1, count: payload),
                                  createdAt: Date(timeIntervalSince1970: 0))
            return OutboxEntry(id: OutboxID(rawValue: Int64(sequence)), peer: "p", sequence: sequence, item: item,
                               attempts: 0, lastAttemptAt: nil)
        }
    }

    /// Reads the window and sends what `entries` holds on `connection`; returns the step.
    static func send(_ outbox: inout ReliableOutbox, _ sequences: ClosedRange<UInt64>, window: Int = 100,
                     connection: UInt64 = 1, now: UInt64 = 0) -> ReliableOutbox.PumpStep? {
        guard let read = outbox.nextRead(window: window) else { return nil }
        return outbox.read(entries(sequences), for: read, connection: connection, now: now)
    }

    @Test func aPumpSendsWithinTheWindowAndAnAckFreesIt() {
        var outbox = ReliableOutbox(retryInitial: 1)
        #expect(outbox.nextRead(window: 4) == ReliableOutbox.Read(after: 0, limit: 4, epoch: 0))
        #expect(Self.send(&outbox, 1...4, window: 4) == .send(connection: 1, resendAfter: nil))
        #expect(outbox.lastSent == 4 && outbox.highestSent == 4 && outbox.attempts == [1: 1, 2: 1, 3: 1, 4: 1])
        #expect(outbox.nextRead(window: 4) == nil, "four items in flight fill a window of four")
        #expect(outbox.acked(upTo: 3, now: 5, retryInitial: 1) == .delete(newlyAcked: 3))
        #expect(outbox.attempts == [4: 1], "the attempts of acknowledged items are forgotten")
        #expect(outbox.nextRead(window: 4) == ReliableOutbox.Read(after: 4, limit: 3, epoch: 0))
        #expect(outbox.acked(upTo: 3, now: 6, retryInitial: 1) == .stale, "a duplicate ack does nothing")
        #expect(outbox.acked(upTo: 9, now: 6, retryInitial: 1) == .refused, "an ack above what was sent is refused")
        #expect(outbox.lastAcked == 3)
    }

    @Test func aReadThatSpannedARestartOrFoundNothingSendsNothing() {
        var outbox = ReliableOutbox(retryInitial: 1)
        guard let read = outbox.nextRead(window: 10) else { Issue.record("window full"); return }
        outbox.resendFromLastAck()
        #expect(outbox.read(Self.entries(1...2), for: read, connection: 1, now: 0) == .readAgain)
        #expect(outbox.lastSent == 0)
        let empty = outbox.nextRead(window: 10)!
        #expect(outbox.read([], for: empty, connection: 1, now: 0) == .done)
        let unconnected = outbox.nextRead(window: 10)!
        #expect(outbox.read(Self.entries(1...1), for: unconnected, connection: nil, now: 0) == .done,
                "no stream connection: nothing is sent")
        // A pump asked for while one runs reads once more, even when its read came back empty.
        #expect(outbox.beginPump() == true)
        #expect(outbox.beginPump() == false)
        let again = outbox.nextRead(window: 10)!
        #expect(outbox.beginPump() == false)
        #expect(outbox.read([], for: again, connection: 1, now: 0) == .readAgain)
        outbox.endPump()
        #expect(outbox.wantPump() == true)
        #expect(outbox.wantPump() == false, "a pump about to start is not started twice")
        outbox.scheduledPumpStarts()
        #expect(outbox.beginPump() == true)
    }

    /// Items after the last ack go on one connection: on a new one the stream starts over from
    /// the last ack and announces it before the next batch.
    @Test func aNewConnectionStartsOverFromTheLastAck() {
        var outbox = ReliableOutbox(retryInitial: 1)
        #expect(Self.send(&outbox, 1...5, connection: 1) == .send(connection: 1, resendAfter: nil))
        #expect(outbox.acked(upTo: 2, now: 0, retryInitial: 1) == .delete(newlyAcked: 2))
        #expect(Self.send(&outbox, 6...6, connection: 2) == .readAgain)
        #expect(outbox.lastSent == 2)
        #expect(Self.send(&outbox, 3...6, connection: 2) == .send(connection: 2, resendAfter: 2))
        #expect(outbox.attempts[3] == 2 && outbox.attempts[6] == 1)
        #expect(Self.send(&outbox, 7...7, connection: 2) == .send(connection: 2, resendAfter: nil), "announced once")
    }

    @Test func aStalledPeerIsRetriedWithAGrowingJitteredDelay() {
        var outbox = ReliableOutbox(retryInitial: 1)
        var random = DeliveryRandom(seed: 7)
        outbox.restart(now: 0, retryInitial: 1)
        #expect(!outbox.retryIfStalled(now: 5 * Self.second, retryMaximum: 30, using: &random), "nothing unacknowledged")
        _ = Self.send(&outbox, 1...3, now: 10)
        #expect(!outbox.retryIfStalled(now: Self.second / 2, retryMaximum: 30, using: &random))
        var delays: [Double] = []
        var now = 10 as UInt64
        for _ in 0..<8 {
            now += UInt64(outbox.retryDelay * 1e9) + 1
            #expect(outbox.retryIfStalled(now: now, retryMaximum: 30, using: &random))
            #expect(outbox.lastSent == 0, "resends from the last ack")
            delays.append(outbox.retryDelay)
            _ = Self.send(&outbox, 1...3, now: now)
        }
        #expect(delays.first.map { (1.5...2.5).contains($0) } == true, "delays: \(delays)")
        #expect(delays.last == 30, "capped at the maximum: \(delays)")
        #expect(zip(delays, delays.dropFirst()).allSatisfy { $0 <= $1 })
        // The same seed draws the same delays (a simulated run replays).
        var replay = ReliableOutbox(retryInitial: 1), again = DeliveryRandom(seed: 7)
        _ = Self.send(&replay, 1...3, now: 10)
        #expect(replay.retryIfStalled(now: 10 + Self.second + 1, retryMaximum: 30, using: &again))
        #expect(replay.retryDelay == delays[0])
        // An ack resets the delay.
        #expect(outbox.acked(upTo: 3, now: now, retryInitial: 1) == .delete(newlyAcked: 3))
        #expect(outbox.retryDelay == 1)
    }

    @Test func roomNoticesRestartAtMostEvery100Milliseconds() {
        var outbox = ReliableOutbox(retryInitial: 1)
        #expect(outbox.roomNotice(now: 0, retryInitial: 1) == .ignored)
        _ = Self.send(&outbox, 1...3)
        #expect(outbox.roomNotice(now: Self.second, retryInitial: 1) == .restarted)
        #expect(outbox.lastSent == 0 && !outbox.roomResendPending)
        _ = Self.send(&outbox, 1...3)
        #expect(outbox.roomNotice(now: Self.second + 50_000_000, retryInitial: 1) == .deferred)
        #expect(outbox.roomResendPending && outbox.lastSent == 3)
        #expect(outbox.roomNotice(now: Self.second + 100_000_000, retryInitial: 1) == .restarted)
        #expect(!outbox.roomResendPending)
    }

    /// Acks that come while a delete runs merge into one next delete, up to the highest.
    @Test func acksDuringADeleteMergeIntoTheNext() {
        var outbox = ReliableOutbox(retryInitial: 1)
        #expect(outbox.deleteWanted(upTo: 3) == true)
        #expect(outbox.deleteWanted(upTo: 9) == false)
        #expect(outbox.deleteWanted(upTo: 5) == false)
        #expect(outbox.deleteFinished() == 9)
        #expect(outbox.deleteFinished() == nil)
        #expect(outbox.deleteWanted(upTo: 10) == true, "none runs any more")
    }

    @Test func batchesStayUnderTheByteLimitAndKeepOrder() {
        let entries = Self.entries(1...10, payload: 100)
        let batches = ReliableOutbox.batches(entries, maximumBytes: 3 * 164)
        #expect(batches.map(\.count) == [3, 3, 3, 1])
        #expect(batches.flatMap { $0.map(\.sequence) } == Array(1...10))
        #expect(ReliableOutbox.batches(Self.entries(1...2, payload: 1000), maximumBytes: 10).map(\.count) == [1, 1],
                "an item larger than the limit goes alone")
        #expect(ReliableOutbox.batches([], maximumBytes: 10).isEmpty)
    }
}
