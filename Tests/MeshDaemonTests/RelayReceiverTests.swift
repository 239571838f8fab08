import Testing
@testable import MeshDaemon

/// What a relay receiver hands on when the broker delivers, drops, duplicates, reorders or
/// replays messages, or someone forges headers: streams in order or a closed path, never
/// wrong or repeated bytes, and bounded state.
@Suite("Relay receiver")
struct RelayReceiverTests {
    static let path = RelayPathID(rawValue: 0xAB)
    static let other = RelayPathID(rawValue: 0xCD)

    static func data(_ path: RelayPathID, _ sequence: UInt64, _ bytes: [UInt8]) -> [UInt8] {
        RelayEnvelope.stream(path, sequence: sequence, data: bytes).encode()!
    }

    static func data(_ sequence: UInt64, _ bytes: [UInt8]) -> [UInt8] { data(path, sequence, bytes) }

    @Test func inOrderMessagesOpenThePathAndArriveInOrder() {
        var receiver = RelayReceiver()
        #expect(receiver.receive(Self.data(0, [1])) == [.opened(Self.path), .streamData(Self.path, [1])])
        #expect(receiver.receive(Self.data(1, [2, 3])) == [.streamData(Self.path, [2, 3])])
        #expect(receiver.isOpen(Self.path))
        #expect(receiver.receive(RelayEnvelope.close(Self.path, sequence: 2).encode()!) == [.closed(Self.path, .remote)])
        #expect(!receiver.isOpen(Self.path))
        #expect(receiver.paths.isEmpty)
    }

    @Test func reorderedMessagesWaitForTheGapAndThenComeInOrder() {
        var receiver = RelayReceiver()
        #expect(receiver.receive(Self.data(2, [3])).isEmpty)
        #expect(receiver.receive(RelayEnvelope.close(Self.path, sequence: 3).encode()!).isEmpty)
        #expect(receiver.receive(Self.data(1, [2])).isEmpty)
        #expect(receiver.bufferedBytes == 2)
        #expect(receiver.receive(Self.data(0, [1])) == [
            .opened(Self.path), .streamData(Self.path, [1]), .streamData(Self.path, [2]), .streamData(Self.path, [3]),
            .closed(Self.path, .remote),
        ])
        #expect(receiver.bufferedBytes == 0)
    }

    @Test func duplicatesAndReplaysAreDroppedSilently() {
        var receiver = RelayReceiver()
        _ = receiver.receive(Self.data(0, [1]))
        _ = receiver.receive(Self.data(2, [3]))
        #expect(receiver.receive(Self.data(0, [1])).isEmpty)       // replay of a delivered one
        #expect(receiver.receive(Self.data(0, [9])).isEmpty)       // forged copy of a delivered number
        #expect(receiver.receive(Self.data(2, [3])).isEmpty)       // duplicate of a held one
        #expect(receiver.counters.duplicates == 3)
        #expect(receiver.receive(Self.data(1, [2])) == [.streamData(Self.path, [2]), .streamData(Self.path, [3])])
    }

    @Test func aGapBeyondTheWindowClosesThePathAndItsLateMessagesAreDropped() {
        var receiver = RelayReceiver(limits: .init(window: 8))
        _ = receiver.receive(Self.data(0, [1]))
        #expect(receiver.receive(Self.data(7, [8])).isEmpty)        // within the window: held
        #expect(receiver.receive(Self.data(9, [10])) == [.closed(Self.path, .gap)])
        #expect(receiver.counters.gapsClosed == 1)
        #expect(receiver.bufferedBytes == 0)
        #expect(receiver.receive(Self.data(1, [2])).isEmpty)        // late: the path is gone
        #expect(receiver.receive(Self.data(0, [1])).isEmpty)        // a replay does not reopen it
        #expect(receiver.counters.stale == 2)
    }

    @Test func heldBytesPastTheShareCloseThePath() {
        var receiver = RelayReceiver(limits: .init(maximumBufferedBytes: 10))
        _ = receiver.receive(Self.data(0, [0]))
        #expect(receiver.receive(Self.data(2, Array(repeating: 1, count: 6))).isEmpty)
        #expect(receiver.receive(Self.data(3, Array(repeating: 1, count: 5))) == [.closed(Self.path, .overflow)])
        #expect(receiver.bufferedBytes == 0)
        // Another path still gets its share.
        #expect(receiver.receive(Self.data(Self.other, 1, Array(repeating: 1, count: 10))).isEmpty)
        #expect(receiver.bufferedBytes == 10)
    }

    @Test func aNewPathPastTheLimitClosesTheLeastRecentlyActiveOne() {
        var receiver = RelayReceiver(limits: .init(maximumPaths: 2))
        let third = RelayPathID(rawValue: 0xEF)
        _ = receiver.receive(Self.data(Self.path, 0, [1]))
        _ = receiver.receive(Self.data(Self.other, 0, [1]))
        _ = receiver.receive(Self.data(Self.path, 1, [2]))          // path is now the more recent
        #expect(receiver.receive(Self.data(third, 0, [1])) == [.closed(Self.other, .evicted), .opened(third), .streamData(third, [1])])
        #expect(receiver.paths.count == 2)
        #expect(receiver.counters.evicted == 1)
    }

    @Test func anUnknownPathFarFromItsStartIsNotOpened() {
        var receiver = RelayReceiver(limits: .init(window: 8))
        #expect(receiver.receive(Self.data(8, [1])).isEmpty)
        #expect(receiver.paths.isEmpty)
        #expect(receiver.counters.stale == 1)
    }

    @Test func aPathClosedHereDropsItsLateMessages() {
        var receiver = RelayReceiver()
        _ = receiver.receive(Self.data(0, [1]))
        receiver.closeLocally(Self.path)
        #expect(receiver.receive(Self.data(1, [2])).isEmpty)
        #expect(receiver.paths.isEmpty)
    }

    @Test func theRememberedClosedPathsAreBounded() {
        var receiver = RelayReceiver(limits: .init(rememberedClosedPaths: 3))
        for id in 1...10 as ClosedRange<UInt64> {
            _ = receiver.receive(Self.data(RelayPathID(rawValue: id), 0, [1]))
            receiver.closeLocally(RelayPathID(rawValue: id))
        }
        // The oldest are forgotten: a message of path 1 opens a path again (the handshake inside
        // then fails as any replayed handshake does).
        #expect(receiver.receive(Self.data(RelayPathID(rawValue: 1), 0, [1])).first == .opened(RelayPathID(rawValue: 1)))
        #expect(receiver.receive(Self.data(RelayPathID(rawValue: 10), 1, [1])).isEmpty)
    }

    @Test func datagramsAndMailboxBoxesPassStraightThroughAndGarbageIsCounted() {
        var receiver = RelayReceiver()
        #expect(receiver.receive(RelayEnvelope.unnumbered(.datagram, payload: [1]).encode()!) == [.datagram([1])])
        #expect(receiver.receive(RelayEnvelope.unnumbered(.datagram, payload: [1]).encode()!) == [.datagram([1])])
        #expect(receiver.receive(RelayEnvelope.unnumbered(.mailboxItem, payload: [2]).encode()!) == [.mailboxItem([2])])
        #expect(receiver.receive(RelayEnvelope.unnumbered(.mailboxAck, payload: [3]).encode()!) == [.mailboxAck([3])])
        #expect(receiver.receive([1, 2, 3]).isEmpty)
        #expect(receiver.counters.malformed == 1)
    }

    /// A broker that duplicates, reorders within the window and replays: the stream arrives
    /// whole, once, in order. One that also drops: what arrives is a prefix of the stream, and
    /// a path that cannot continue is closed, never handed wrong bytes.
    @Test func aHostileBrokerCostsOnlyDelay() {
        let seed = SeededGenerator.seed(for: "RelayReceiverTests.aHostileBrokerCostsOnlyDelay")
        var random = SeededGenerator(seed: seed)
        for round in 0..<200 {
            let count = Int.random(in: 1...120, using: &random)
            let chunks = (0..<count).map { index in (0..<Int.random(in: 1...9, using: &random)).map { _ in UInt8(truncatingIfNeeded: index) } }
            var sender = RelayStreamSender(pathID: RelayPathID(rawValue: UInt64(round + 1)))
            var sent = chunks.map { sender.messages(carrying: $0)[0] }
            sent.append(sender.closeMessage()!)
            let drops = round % 2 == 1
            var delivered: [[UInt8]] = []
            var receiver = RelayReceiver(limits: .init(window: 16))
            var closed: RelayReceiver.CloseReason?
            for message in Self.hostileOrder(of: sent, drops: drops, using: &random) {
                for action in receiver.receive(message) {
                    switch action {
                    case .streamData(_, let bytes): delivered.append(bytes); #expect(closed == nil)
                    case .closed(_, let reason): #expect(closed == nil); closed = reason
                    case .opened: #expect(delivered.isEmpty)
                    default: Issue.record("unexpected \(action)")
                    }
                }
            }
            #expect(Array(chunks.prefix(delivered.count)) == delivered, "round \(round): delivered bytes are the stream's start")
            if !drops {
                #expect(delivered == chunks, "round \(round)")
                #expect(closed == .remote, "round \(round)")
            }
            #expect(receiver.bufferedBytes <= receiver.limits.maximumBufferedBytes)
            #expect(receiver.bufferedBytes == receiver.paths.values.reduce(0) { $0 + $1.held.values.reduce(0) { $0 + $1.payload.count } })
        }
    }

    /// Each message once or twice, some dropped (when `drops`), shuffled by less than 12 places,
    /// and a few replays of earlier ones at the end.
    static func hostileOrder(of messages: [[UInt8]], drops: Bool, using random: inout SeededGenerator) -> [[UInt8]] {
        var keyed: [(Double, [UInt8])] = []
        for (index, message) in messages.enumerated() {
            if drops && Int.random(in: 0..<10, using: &random) == 0 { continue }
            for _ in 0..<Int.random(in: 1...2, using: &random) {
                keyed.append((Double(index) + Double.random(in: 0..<12, using: &random), message))
            }
        }
        var order = keyed.sorted { $0.0 < $1.0 }.map(\.1)
        for _ in 0..<3 { if let any = messages.randomElement(using: &random) { order.append(any) } }
        return order
    }
}
