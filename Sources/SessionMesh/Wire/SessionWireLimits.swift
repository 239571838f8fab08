/// Upper bounds the ``SessionWireCodec`` enforces when decoding and encoding, so a hostile or
/// broken peer cannot make a receiver allocate without bound.
public struct SessionWireLimits: Sendable, Hashable {
    /// Longest identifier string in bytes (feature, peer, payload type). Default 1024.
    public var maxStringBytes: Int
    /// Longest payload (event or state bytes). Default 16 MiB.
    public var maxPayloadBytes: Int
    /// Most entries in a snapshot's `reflectedSequences`. Default 1024.
    public var maxReflectedPeers: Int

    /// Creates limits (negative values count as 0); the defaults are ``default``.
    public init(maxStringBytes: Int = 1024, maxPayloadBytes: Int = 16 << 20, maxReflectedPeers: Int = 1024) {
        self.maxStringBytes = max(0, maxStringBytes)
        self.maxPayloadBytes = max(0, maxPayloadBytes)
        self.maxReflectedPeers = max(0, maxReflectedPeers)
    }

    /// 1024-byte strings, 16 MiB payloads, 1024 reflected peers.
    public static let `default` = SessionWireLimits()
}
