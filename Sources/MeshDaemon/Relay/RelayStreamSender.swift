/// Numbers and cuts one relay path's outgoing stream into relay messages, as a TCP socket
/// would segment it.
///
/// The byte stream is what a TCP connection would carry (preamble, then `len`-framed frames);
/// message boundaries mean nothing to the receiver, which joins the payloads in sequence order.
struct RelayStreamSender: Sendable {
    /// The path this sender numbers.
    let pathID: RelayPathID
    /// How the messages are padded.
    let padding: RelayPadding
    /// The number the next message gets.
    private(set) var nextSequence: UInt64 = 0
    /// Whether the close message went out (nothing is sent after it).
    private(set) var isClosed = false

    /// A sender for a new path (``RelayPathID/random()`` for a new dial).
    init(pathID: RelayPathID, padding: RelayPadding = .none) {
        self.pathID = pathID
        self.padding = padding
    }

    /// The messages that carry `bytes`, in order, each at most ``RelayEnvelope/maximumSize``
    /// long. Empty for no bytes, or once the path is closed.
    mutating func messages(carrying bytes: [UInt8]) -> [[UInt8]] {
        guard !isClosed, pathID != .none else { return [] }
        var messages: [[UInt8]] = []
        var start = 0
        while start < bytes.count {
            let end = min(start + RelayEnvelope.maximumPayload, bytes.count)
            let envelope = RelayEnvelope.stream(pathID, sequence: nextSequence, data: Array(bytes[start..<end]))
            if let encoded = envelope.encode(padding: padding) { messages.append(encoded) }
            nextSequence += 1
            start = end
        }
        return messages
    }

    /// The message that closes the path; nil once it was made.
    mutating func closeMessage() -> [UInt8]? {
        guard !isClosed, pathID != .none else { return nil }
        isClosed = true
        return RelayEnvelope.close(pathID, sequence: nextSequence).encode(padding: padding)
    }
}
