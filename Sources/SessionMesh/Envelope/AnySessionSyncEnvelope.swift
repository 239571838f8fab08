import Foundation

/// An envelope whose payload is opaque bytes: what transports, the daemon and the local socket
/// carry, whatever the feature.
///
/// Encode it for the wire with `SessionWireCodec.encode(_:)`.
/// Convert to and from the typed form with ``init(_:coding:)`` and ``typed(as:coding:)``.
public struct AnySessionSyncEnvelope: Sendable, Hashable, Codable {
    /// Who sent it, in which session, at which sequence; never altered by a transport.
    public var metadata: SessionSyncMetadata
    /// The event encoded by the feature's ``SessionPayloadCoding``.
    public var payload: Data

    /// Wraps already-encoded payload bytes.
    public init(metadata: SessionSyncMetadata, payload: Data) {
        self.metadata = metadata
        self.payload = payload
    }

    /// Erases a typed envelope by encoding its payload.
    ///
    /// - Throws: ``SessionSyncError/payloadEncodingFailed(payloadType:reason:)`` when the
    ///   payload does not encode.
    public init<Payload: Encodable>(
        _ typed: SessionSyncEnvelope<Payload>,
        coding: any SessionPayloadCoding = JSONSessionPayloadCoding()
    ) throws {
        do {
            self.init(metadata: typed.metadata, payload: try coding.encode(typed.payload))
        } catch {
            throw SessionSyncError.payloadEncodingFailed(
                payloadType: typed.metadata.payloadType, reason: String(describing: error))
        }
    }

    /// Decodes the payload as `Payload`, giving back the typed envelope.
    ///
    /// Does not check `metadata.payloadType`; the engine does that on ``SessionSyncEngine/receive(_:)``.
    /// - Throws: ``SessionSyncError/payloadDecodingFailed(payloadType:reason:)`` when the bytes
    ///   are not a `Payload`.
    public func typed<Payload: Decodable>(
        as type: Payload.Type,
        coding: any SessionPayloadCoding = JSONSessionPayloadCoding()
    ) throws -> SessionSyncEnvelope<Payload> {
        do {
            return SessionSyncEnvelope(metadata: metadata, payload: try coding.decode(type, from: payload))
        } catch {
            throw SessionSyncError.payloadDecodingFailed(
                payloadType: metadata.payloadType, reason: String(describing: error))
        }
    }
}
