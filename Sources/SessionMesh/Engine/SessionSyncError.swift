import Foundation

/// Why the engine, a conversion or a transport refused something. Each case names what did not
/// match or what failed, so a person can tell which peer or feature is misconfigured.
public enum SessionSyncError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The input belongs to another session (a leftover of an earlier one, or a foreign one).
    case sessionMismatch(expected: UUID, received: UUID)
    /// The input belongs to another feature multiplexed over the same transport.
    case featureMismatch(expected: String, received: String)
    /// The payload is of another type than this engine's event or state type.
    case payloadTypeMismatch(expected: String, received: String)
    /// The sender speaks another protocol version.
    case protocolVersionMismatch(expected: Int, received: Int)
    /// A typed payload could not be encoded to bytes.
    case payloadEncodingFailed(payloadType: String, reason: String)
    /// Payload bytes could not be decoded as the expected type.
    case payloadDecodingFailed(payloadType: String, reason: String)
    /// The feature's reducer threw; the sequence did not advance.
    case reducerFailed(eventID: UUID, reason: String)
    /// A new source peer would exceed the engine's configured peer limit.
    case tooManyPeers(limit: Int)
    /// This peer has issued sequence 2^64−1 in this session (only reachable through a hostile
    /// snapshot); start a new session.
    case sequenceExhausted(peerID: String)
    /// The transport cannot deliver in this mode (see ``SessionTransportCapabilities``).
    case unsupportedDeliveryMode(SessionDeliveryMode)
    /// The transport cannot send right now (closed, not started, or no such peer).
    case transportUnavailable(reason: String)

    /// A sentence naming what failed and the values involved.
    public var description: String {
        switch self {
        case let .sessionMismatch(expected, received):
            "session mismatch: engine is for session \(expected), input is for \(received)"
        case let .featureMismatch(expected, received):
            "feature mismatch: engine is for feature '\(expected)', input is for '\(received)'"
        case let .payloadTypeMismatch(expected, received):
            "payload type mismatch: expected '\(expected)', received '\(received)'"
        case let .protocolVersionMismatch(expected, received):
            "protocol version mismatch: this peer speaks \(expected), input is version \(received)"
        case let .payloadEncodingFailed(payloadType, reason):
            "could not encode payload of type '\(payloadType)': \(reason)"
        case let .payloadDecodingFailed(payloadType, reason):
            "could not decode payload of type '\(payloadType)': \(reason)"
        case let .reducerFailed(eventID, reason):
            "reducer failed on event \(eventID): \(reason); its sequence was not consumed"
        case let .tooManyPeers(limit):
            "more than \(limit) source peers in one session; raise SessionSyncEngineConfiguration.maxPeers if that is expected"
        case let .sequenceExhausted(peerID):
            "peer '\(peerID)' has used every sequence number of this session; start a new session"
        case let .unsupportedDeliveryMode(mode):
            "the transport does not support delivery mode \(mode)"
        case let .transportUnavailable(reason):
            "transport unavailable: \(reason)"
        }
    }
}
