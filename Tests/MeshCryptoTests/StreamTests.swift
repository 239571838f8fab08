import Testing
@testable import MeshCrypto

@Suite struct StreamTests {
    @Test func messagesRoundTripInAnySplit() throws {
        var (alice, bob) = try Fixtures.channel()
        var rng = SeededGenerator(test: "messagesRoundTripInAnySplit")
        let messages: [[UInt8]] = [[], [1], rng.bytes(1000), rng.bytes(StreamSealer.maximumChunk),
                                   rng.bytes(StreamSealer.maximumChunk + 1), rng.bytes(200_000)]
        var wire: [UInt8] = []
        for message in messages { wire += try alice.streamSender.seal(message) }
        var received: [[UInt8]] = []
        var offset = 0
        while offset < wire.count {
            let step = min(wire.count - offset, Int.random(in: 1...70_000, using: &rng))
            received += try bob.streamReceiver.feed(Array(wire[offset..<(offset + step)]))
            offset += step
        }
        #expect(received == messages)
    }

    @Test func largeMessageIsSplitIntoBoundedFrames() throws {
        var (alice, _) = try Fixtures.channel()
        let wire = try alice.streamSender.seal([UInt8](repeating: 3, count: 3 * StreamSealer.maximumChunk + 5))
        var offset = 0, frames = 0
        while offset < wire.count {
            let length = Int(wire[offset]) << 8 | Int(wire[offset + 1])
            #expect(length <= 65_535)
            offset += 2 + length
            frames += 1
        }
        #expect(frames == 4)
        #expect(offset == wire.count)
    }

    @Test func corruptionIsFatalForTheStream() throws {
        var (alice, bob) = try Fixtures.channel()
        var wire = try alice.streamSender.seal(Array("payload".utf8))
        wire[5] ^= 0x40
        let error = #expect(throws: CryptoError.self) { try bob.streamReceiver.feed(wire) }
        #expect(error?.code == .authenticationFailed)
        // Stays failed: even a genuine frame is refused afterwards.
        let next = try alice.streamSender.seal([1])
        #expect(throws: CryptoError.self) { try bob.streamReceiver.feed(next) }
    }

    @Test func changedLengthOrReorderedFramesFail() throws {
        var (alice, bob) = try Fixtures.channel()
        let first = try alice.streamSender.seal([1, 2, 3])
        let second = try alice.streamSender.seal([4, 5, 6])
        #expect(throws: CryptoError.self) { try bob.streamReceiver.feed(second + first) }
        var shortFrame = first
        shortFrame[1] = 3  // a length below flag + tag
        var (_, bob2) = try Fixtures.channel()
        #expect(throws: CryptoError.self) { try bob2.streamReceiver.feed(shortFrame) }
    }

    @Test func joinedMessageSizeIsCapped() throws {
        var (alice, bob) = try Fixtures.channel()
        bob.streamReceiver.maximumMessageSize = 100_000
        let wire = try alice.streamSender.seal([UInt8](repeating: 1, count: 150_000))
        let error = #expect(throws: CryptoError.self) { try bob.streamReceiver.feed(wire) }
        #expect(error?.code == .messageTooLarge)
    }
}
