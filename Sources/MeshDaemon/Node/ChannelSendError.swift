/// Why `send(_:to:path:)` failed.
public struct ChannelSendError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable reason.
    public enum Code: String, Sendable, Equatable {
        /// No paired device has that ID.
        case unknownPeer
        /// The peer has no active channel now.
        case notActive
        /// The message exceeds `MeshNode.maximumDatagramMessage` on the datagram path.
        case tooLargeForDatagram
        /// The connection failed while writing.
        case writeFailed
    }

    /// The reason.
    public var code: Code
    /// A sentence for logs.
    public var description: String { "channel send failed: \(code.rawValue)" }
}
