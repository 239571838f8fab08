/// How relay messages are padded before they go to the broker, which sees every size.
///
/// ``buckets`` rounds each message up to the next power of two from 64 bytes to
/// ``RelayEnvelope/maximumSize`` (64, 128, 256, …, 65 536), so the broker learns a size class
/// instead of a size; it costs up to twice the bytes. The receiver reads the payload length
/// from the header, so it needs no setting.
enum RelayPadding: Sendable, Equatable {
    /// No padding: each message is header and payload.
    case none
    /// Up to the next power of two, at least 64 bytes.
    case buckets

    /// Smallest bucket.
    static let smallestBucket = 64

    /// The size a message of `unpadded` bytes is sent at (never below `unpadded`).
    func size(for unpadded: Int) -> Int {
        switch self {
        case .none:
            return unpadded
        case .buckets:
            var bucket = Self.smallestBucket
            while bucket < unpadded, bucket < RelayEnvelope.maximumSize { bucket *= 2 }
            return max(bucket, unpadded)
        }
    }
}
