import Foundation

/// A snapshot whose state is opaque bytes: what transports, the daemon's latest-state slots and
/// the local socket carry.
///
/// Encode it for the wire with `SessionWireCodec.encode(_:)`.
/// Convert to and from the typed form with ``init(_:coding:)`` and ``typed(as:coding:)``.
public struct AnySessionSyncSnapshot: Sendable, Hashable, Codable {
    /// Who made it, in which session.
    public var metadata: SessionSyncMetadata
    /// The maker's state revision; a slot never replaces a snapshot by one with a lower revision.
    public var revision: UInt64
    /// For every source peer id, the highest sequence of that peer the state reflects.
    public var reflectedSequences: [String: UInt64]
    /// The state encoded by the feature's ``SessionPayloadCoding``.
    public var state: Data

    /// Wraps already-encoded state bytes.
    public init(metadata: SessionSyncMetadata, revision: UInt64, reflectedSequences: [String: UInt64] = [:], state: Data) {
        self.metadata = metadata
        self.revision = revision
        self.reflectedSequences = reflectedSequences
        self.state = state
    }

    /// Erases a typed snapshot by encoding its state.
    ///
    /// - Throws: ``SessionSyncError/payloadEncodingFailed(payloadType:reason:)``.
    public init<State: Encodable>(
        _ typed: SessionSyncSnapshot<State>,
        coding: any SessionPayloadCoding = JSONSessionPayloadCoding()
    ) throws {
        do {
            self.init(
                metadata: typed.metadata, revision: typed.revision,
                reflectedSequences: typed.reflectedSequences, state: try coding.encode(typed.state))
        } catch {
            throw SessionSyncError.payloadEncodingFailed(
                payloadType: typed.metadata.payloadType, reason: String(describing: error))
        }
    }

    /// Decodes the state as `State`, giving back the typed snapshot.
    ///
    /// - Throws: ``SessionSyncError/payloadDecodingFailed(payloadType:reason:)``.
    public func typed<State: Decodable>(
        as type: State.Type,
        coding: any SessionPayloadCoding = JSONSessionPayloadCoding()
    ) throws -> SessionSyncSnapshot<State> {
        do {
            return SessionSyncSnapshot(
                metadata: metadata, revision: revision, reflectedSequences: reflectedSequences,
                state: try coding.decode(type, from: state))
        } catch {
            throw SessionSyncError.payloadDecodingFailed(
                payloadType: metadata.payloadType, reason: String(describing: error))
        }
    }
}
