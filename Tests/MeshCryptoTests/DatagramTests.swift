import Testing
@testable import MeshCrypto

@Suite struct DatagramTests {
    @Test func sealedDatagramOpensOnTheOtherSideOnly() throws {
        var (alice, bob) = try Fixtures.channel()
        let header: [UInt8] = [1, 2, 3]
        let sealed = try alice.datagramSender.seal(Array("hello".utf8), associatedData: header)
        #expect(sealed.count == 5 + DatagramSealer.overhead)
        #expect(try bob.datagramReceiver.open(sealed, associatedData: header) == Array("hello".utf8))
        // Alice cannot open her own datagram: the two directions have different keys.
        #expect(throws: CryptoError.self) { try alice.datagramReceiver.open(sealed, associatedData: header) }
    }

    @Test func duplicateIsRejected() throws {
        var (alice, bob) = try Fixtures.channel()
        let sealed = try alice.datagramSender.seal([9], associatedData: [])
        _ = try bob.datagramReceiver.open(sealed, associatedData: [])
        let error = #expect(throws: CryptoError.self) { try bob.datagramReceiver.open(sealed, associatedData: []) }
        #expect(error?.code == .replayedCounter)
    }

    @Test func reorderingInsideTheWindowIsAccepted() throws {
        var (alice, bob) = try Fixtures.channel()
        let sealed = try (0..<3000).map { try alice.datagramSender.seal([UInt8(truncatingIfNeeded: $0)], associatedData: []) }
        // Newest first, then everything older, still inside the 4032-packet window.
        _ = try bob.datagramReceiver.open(sealed[2999], associatedData: [])
        for index in stride(from: 2998, through: 0, by: -1) {
            #expect(try bob.datagramReceiver.open(sealed[index], associatedData: []) == [UInt8(truncatingIfNeeded: index)])
        }
        #expect(bob.datagramReceiver.messagesReceived == 3000)
        #expect(DatagramOpener.windowSize >= 2048)
    }

    @Test func tooOldIsRejected() throws {
        var (alice, bob) = try Fixtures.channel()
        let first = try alice.datagramSender.seal([1], associatedData: [])
        var last: [UInt8] = []
        for _ in 0..<(DatagramOpener.windowSize + 10) { last = try alice.datagramSender.seal([2], associatedData: []) }
        _ = try bob.datagramReceiver.open(last, associatedData: [])
        let error = #expect(throws: CryptoError.self) { try bob.datagramReceiver.open(first, associatedData: []) }
        #expect(error?.code == .counterTooOld)
    }

    @Test func forgeryDoesNotMoveTheWindow() throws {
        var (alice, bob) = try Fixtures.channel()
        let genuine = try alice.datagramSender.seal([1], associatedData: [])
        // A forged datagram claiming a far-future counter.
        var forged = try alice.datagramSender.seal([2], associatedData: [])
        forged.replaceSubrange(0..<8, with: withUnsafeBytes(of: UInt64(1 << 40).littleEndian) { Array($0) })
        let error = #expect(throws: CryptoError.self) { try bob.datagramReceiver.open(forged, associatedData: []) }
        #expect(error?.code == .authenticationFailed)
        // Counter 0 is still acceptable: the forgery did not slide the window.
        #expect(try bob.datagramReceiver.open(genuine, associatedData: []) == [1])
    }

    @Test func tamperedBytesOrHeaderFailAuthentication() throws {
        var (alice, bob) = try Fixtures.channel()
        var sealed = try alice.datagramSender.seal([1, 2, 3], associatedData: [7])
        #expect(throws: CryptoError.self) { try bob.datagramReceiver.open(sealed, associatedData: [8]) }
        sealed[9] ^= 1
        #expect(throws: CryptoError.self) { try bob.datagramReceiver.open(sealed, associatedData: [7]) }
        #expect(throws: CryptoError.self) { try bob.datagramReceiver.open([1, 2, 3], associatedData: []) }
    }

    @Test func counterLimitRefusesToSendAndAsksForRekey() throws {
        var policy = RekeyPolicy()
        policy.rekeyAfterMessages = 2
        policy.rejectAfterMessages = 3
        var (alice, _) = try Fixtures.channel(policy: policy)
        _ = try alice.datagramSender.seal([1], associatedData: [])
        #expect(!alice.datagramSender.needsRekey)
        _ = try alice.datagramSender.seal([1], associatedData: [])
        #expect(alice.datagramSender.needsRekey)
        _ = try alice.datagramSender.seal([1], associatedData: [])
        let error = #expect(throws: CryptoError.self) { try alice.datagramSender.seal([1], associatedData: []) }
        #expect(error?.code == .rekeyRequired)
        #expect(alice.datagramSender.messagesSent == 3)
    }

    @Test func rekeyedChannelsTalkAndOldKeysDoNotOpen() throws {
        let (alice, bob) = try Fixtures.channel()
        var alice2 = alice.rekeyed(), bob2 = bob.rekeyed()
        var bobOld = bob
        let sealed = try alice2.datagramSender.seal([5], associatedData: [])
        #expect(alice2.generation == 1)
        #expect(try bob2.datagramReceiver.open(sealed, associatedData: []) == [5])
        #expect(throws: CryptoError.self) { try bobOld.datagramReceiver.open(sealed, associatedData: []) }
    }

    @Test func rekeyPolicyFollowsWireGuardTimers() {
        let policy = RekeyPolicy.wireGuard
        #expect(policy.action(keyAge: .seconds(10), messagesSent: 5) == .keep)
        #expect(policy.action(keyAge: .seconds(120), messagesSent: 5) == .rekey)
        #expect(policy.action(keyAge: .seconds(10), messagesSent: 1 << 60) == .rekey)
        #expect(policy.action(keyAge: .seconds(180), messagesSent: 5) == .reject)
    }

    @Test func randomArrivalOrderAcceptsEachCounterOnce() throws {
        var rng = SeededGenerator(test: "randomArrivalOrderAcceptsEachCounterOnce")
        var window = ReplayWindow()
        var accepted = Set<UInt64>()
        var highest: UInt64 = 0
        for _ in 0..<20_000 {
            let counter = UInt64.random(in: 0..<6000, using: &rng)
            let verdict = window.check(counter)
            let expected: ReplayWindow.Verdict = counter > highest ? .fresh
                : highest - counter > ReplayWindow.windowSize ? .tooOld
                : accepted.contains(counter) ? .duplicate : .fresh
            #expect(verdict == expected, "counter \(counter), highest \(highest)")
            if verdict == .fresh {
                window.accept(counter)
                accepted.insert(counter)
                highest = max(highest, counter)
            }
        }
    }
}

@Suite struct DatagramBufferTests {
    @Test func allocationFreeFormsMatchTheArrayForms() throws {
        var (alice, bob) = try Fixtures.channel()
        let payload: [UInt8] = Array(0..<200), header: [UInt8] = [9, 9]
        var sealed = [UInt8](repeating: 0, count: payload.count + DatagramSealer.overhead + 10)
        let written = try payload.withUnsafeBytes { p in
            try header.withUnsafeBytes { h in try sealed.withUnsafeMutableBytes { try alice.datagramSender.seal(p, associatedData: h, into: $0) } }
        }
        #expect(written == payload.count + DatagramSealer.overhead)
        #expect(try bob.datagramReceiver.open(Array(sealed[0..<written]), associatedData: header) == payload)
        var small = [UInt8](repeating: 0, count: 10)
        #expect(throws: CryptoError.self) {
            try payload.withUnsafeBytes { p in
                try header.withUnsafeBytes { h in try small.withUnsafeMutableBytes { try alice.datagramSender.seal(p, associatedData: h, into: $0) } }
            }
        }
    }
}
