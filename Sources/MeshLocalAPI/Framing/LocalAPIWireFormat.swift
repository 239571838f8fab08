/// Constants of the local API framing; see `LocalAPIFrameDecoder` for the drawing.
public enum LocalAPIWireFormat {
    /// The two magic bytes that start every frame: ASCII `S`, `M`.
    public static let magic: UInt16 = 0x534D
    /// The framing version this build speaks.
    public static let version: UInt8 = 1
    /// Length of the fixed header, in bytes.
    public static let headerLength = 16
    /// Default maximum body length: 1 MiB. A longer frame is refused with `frame-too-large` and
    /// the connection is closed.
    public static let defaultMaximumBodyLength = 1 << 20
    /// The longest encoded envelope or snapshot an app may `send` or `snapshot.publish`: 128
    /// bytes less than a body, so every frame that later carries it to an app fits in a body
    /// too (an envelope event adds flags, inbox ID, the sender's device ID and mode, ≤ 74 bytes;
    /// a snapshot event or `snapshot.latest` reply the device ID, ≤ 64).
    public static let maximumMessageBytes = defaultMaximumBodyLength - 128
}
