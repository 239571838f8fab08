import MeshLocalAPI
import NIOCore
import SessionMesh

extension MeshClient {
    /// At most this many requests of one batch call go to the daemon in one write; a longer
    /// batch is sent in parts of this size, each after the previous part was answered (the
    /// daemon closes a connection with more than 8 192 requests waiting, docs/LOCAL-API.md §6).
    public static let maximumBatchWrite = 1_024

    /// Sends several envelopes to `peer` (full or short device ID) or to every paired device,
    /// with one hop to the connection's loop, one write and one wake-up for all the replies.
    ///
    /// On the wire this is exactly `envelopes.count` `send` requests, as that many calls of
    /// `send(envelope:mode:to:)` would write, written in the order given. Like concurrent single
    /// calls, the daemon may run them concurrently (docs/LOCAL-API.md: requests on one connection
    /// run concurrently), so the peer's app is not promised that order; where strict order of
    /// reliable items matters, send each after the previous one's reply. Prefer it when an app has
    /// several envelopes at hand (a burst of input, a replay): it costs the app far less CPU per
    /// envelope than one call each. More than `maximumBatchWrite` envelopes go in several writes,
    /// one after the other.
    ///
    /// - Returns: one result per envelope, in the order of `envelopes`: the daemon's
    ///   `MeshSendReply` (`sent`, `queued`, `pending`), or the `MeshClientError` for that
    ///   envelope alone — kind `.daemon` with the daemon's code (e.g. `queue-full`,
    ///   `unknown-peer`), or `.connectionClosed` when the connection ended before its answer
    ///   (then it may or may not have been handled). One envelope's error never hides the others'
    ///   outcomes. An empty array sends nothing.
    /// - Throws: `MeshClientError` of kind `.invalidArgument` when an envelope cannot be sent
    ///   (e.g. a target over 255 bytes, a payload the core codec refuses, a request over the
    ///   1 MiB one frame carries); checked for all of
    ///   them before anything is written, so nothing was sent. `CancellationError` when the
    ///   calling task is cancelled while waiting: the envelopes already written are handled by the
    ///   daemon regardless, and their outcomes are not reported.
    public func send(envelopes: [AnySessionSyncEnvelope], mode: SessionDeliveryMode,
                     to peer: String? = nil) async throws -> [Result<MeshSendReply, MeshClientError>] {
        let target = peer ?? ""
        var bodies: [ByteBuffer] = []
        bodies.reserveCapacity(envelopes.count)
        for (index, envelope) in envelopes.enumerated() {
            do {
                bodies.append(try MeshSendRequest(mode: mode, target: target, envelope: envelope).encode())
            } catch {
                throw MeshClientError.invalidArgument(
                    LocalAPIErrorBody(code: error.code, message: "envelope \(index) of the batch: \(error.message)"))
            }
        }
        var results: [Result<MeshSendReply, MeshClientError>] = []
        results.reserveCapacity(envelopes.count)
        var start = 0
        while start < bodies.count {
            let end = min(start + Self.maximumBatchWrite, bodies.count)
            for answer in try await requests(.send, bodies: Array(bodies[start..<end]), flags: .binaryBody) {
                results.append(answer.flatMap(Self.sendReply))
            }
            start = end
        }
        return results
    }

    /// The outcome a `send` reply or error frame reports.
    static func sendReply(_ frame: LocalAPIFrame) -> Result<MeshSendReply, MeshClientError> {
        do throws(MeshClientError) {
            if frame.kind == .error { return .failure(.daemon(try decodeFrame(LocalAPIErrorBody.self, frame))) }
            if let reply = MeshSendReply(compactBody: frame.body) { return .success(reply) }
            return .success(try decodeFrame(MeshSendReply.self, frame))
        } catch {
            return .failure(error)
        }
    }

    /// Decodes a JSON body, a reading failure becoming `.protocolViolation`.
    static func decodeFrame<Value: Decodable>(_ type: Value.Type, _ frame: LocalAPIFrame) throws(MeshClientError) -> Value {
        do {
            return try LocalAPIJSON.decode(Value.self, from: frame.body, operation: frame.operation)
        } catch {
            throw MeshClientError.protocolViolation(error.message)
        }
    }
}
