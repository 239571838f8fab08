/// The received side of one relay stream path: the path's bytes, in order (as the per-peer
/// `RelayReceiver` hands them over), cut into what `WireFrameDecoder` makes of a TCP stream —
/// the preamble on an accepted path, then `len`-framed frame bodies — for the task that drives
/// the path (`PathFrames`).
///
/// Bounded like a TCP connection's decoder: at most one partial frame is held (65 537 bytes),
/// and at most ``maximumQueuedFrames`` whole frames wait for the reader; a path whose reader
/// falls further behind is closed (the node redials), as one that sends a bad preamble is.
final class RelayFrameFeed: @unchecked Sendable {
    /// Frames that may wait for the reader before the path closes.
    static let maximumQueuedFrames = 1024

    private var buffer: [UInt8] = []
    private var expectsPreamble: Bool
    private let continuation: AsyncThrowingStream<WireFrame, any Error>.Continuation
    private let stream: AsyncThrowingStream<WireFrame, any Error>

    /// A feed for an accepted path (`expectsPreamble`) or a dialled one.
    init(expectsPreamble: Bool) {
        self.expectsPreamble = expectsPreamble
        (stream, continuation) = AsyncThrowingStream.makeStream(of: WireFrame.self, throwing: (any Error).self,
                                                                bufferingPolicy: .bufferingOldest(Self.maximumQueuedFrames))
    }

    /// What the path's driver reads.
    var source: RelayFrameSource { RelayFrameSource(iterator: stream.makeAsyncIterator()) }

    /// Takes the path's next bytes; false when the path must close (bad preamble, reader too far
    /// behind), after which the reader sees the error.
    func append(_ bytes: [UInt8]) -> Bool {
        buffer += bytes
        if expectsPreamble {
            guard buffer.count >= 4 else { return true }
            guard let kind = ConnectionKind(preamble: Array(buffer[0..<4])) else {
                fail(WireFormatError(what: "connection preamble"))
                return false
            }
            buffer.removeFirst(4)
            expectsPreamble = false
            guard deliver(.preamble(kind)) else { return false }
        }
        var start = 0
        while buffer.count - start >= 2 {
            let length = Int(buffer[start]) << 8 | Int(buffer[start + 1])
            guard buffer.count - start >= 2 + length else { break }
            let body = Array(buffer[(start + 2)..<(start + 2 + length)])
            start += 2 + length
            guard deliver(.frame(body)) else { return false }
        }
        if start > 0 { buffer.removeFirst(start) }
        return true
    }

    /// The path ended: the reader sees the end (or `error`).
    func finish(throwing error: (any Error)? = nil) {
        buffer.removeAll()
        continuation.finish(throwing: error)
    }

    private func deliver(_ frame: WireFrame) -> Bool {
        if case .dropped = continuation.yield(frame) {
            fail(WireFormatError(what: "relay path: the reader fell more than \(Self.maximumQueuedFrames) frames behind"))
            return false
        }
        return true
    }

    private func fail(_ error: WireFormatError) { finish(throwing: error) }
}

/// A relay path's frames as `PathFrames` reads them.
struct RelayFrameSource: PathFrameSource {
    var iterator: AsyncThrowingStream<WireFrame, any Error>.AsyncIterator

    mutating func next() async throws -> WireFrame? { try await iterator.next() }
}
