/// The frames received on one stream path, in order, read by the one task that drives the path
/// (a handshake, then the channel's stream pump).
///
/// An accepted path first yields its `.preamble` (what the connecting side wants: a channel
/// handshake or pairing), then `.frame`s; a dialled path yields only `.frame`s. The sequence
/// ends when the path closes, and throws when the path failed or the framing was bad
/// (`WireFormatError`: the path then closes without a reply).
public struct PathFrames {
    private var source: any PathFrameSource

    /// Frames read from `source`.
    public init(_ source: any PathFrameSource) { self.source = source }

    /// The next frame; nil once the path ended.
    public mutating func next() async throws -> WireFrame? {
        try await source.next()
    }
}

/// What a transport reads a stream path's received frames from (NIO's inbound stream of a TCP
/// connection; a queue the relay or the simulator fills).
public protocol PathFrameSource {
    /// The next frame; nil once the path ended.
    mutating func next() async throws -> WireFrame?
}
