import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh

/// What the daemon answered to an attach whose events go to a handler
/// (`MeshClient.attach(features:sessionID:app:onEnd:onEvent:)`).
public struct MeshHandlerAttachment: Sendable, Equatable {
    /// Identifies the attachment in the daemon's log.
    public var attachmentID: UInt64
    /// This daemon's full device ID.
    public var localDeviceID: String
    /// Paired devices and whether each is reachable at attach time.
    public var peers: [MeshAttachedPeer]
}

extension MeshClient {
    /// Subscribes this connection to `features` (`attach`) and hands each event to `onEvent`, on
    /// the connection's loop, as soon as it is read: no stream, no task and no thread hop between
    /// the socket and the app's code.
    ///
    /// For apps that react to each event quickly and want the lowest latency and CPU per event.
    /// `onEvent` runs on the thread that does this connection's I/O, one event at a time, in the
    /// order the daemon sent them (inbox items pending at attach time first, right after the
    /// reply). Keep it short and never block in it: until it returns, the connection reads
    /// nothing, and with the shared default event loop group other clients wait too. That is
    /// also the back-pressure: a handler slower than the events lets the daemon's buffer for the
    /// connection fill up, and its slow-reader policy sheds realtime events (reported as
    /// `.eventsDropped`) while reliable items stay in the inbox. To do slow work, hand the event
    /// on (e.g. to an `AsyncStream` or a queue of the app's own) and return. Acknowledge reliable
    /// items with `ackInbox(_:)` as with `attach(features:sessionID:app:)`.
    ///
    /// `onEnd` runs once, on the loop, after the last `onEvent`: when the connection ends, or when
    /// this attach failed or its call was cancelled (then it may run before or after the call
    /// throws). The daemon keeps the attachment as long as the connection; `close()` stops it.
    public func attach(features: [String], sessionID: UUID? = nil, app: String? = nil,
                       onEnd: (@Sendable () -> Void)? = nil,
                       onEvent: @escaping @Sendable (MeshClientEvent) -> Void) async throws -> MeshHandlerAttachment {
        let body = MeshAttachRequest(features: features, sessionID: sessionID, app: app)
        try checked { () throws(LocalAPIErrorBody) in try body.validate() }
        let handler = LocalAPIEventStream(handler: onEvent, onEnd: onEnd)
        // On failure, events already read for it may still be on their way to `onEvent` on the
        // loop; the end follows them there.
        let channel = self.channel
        let reply = try await attachRequest(body, events: handler) { Self.endEvents(handler, on: channel) }
        return MeshHandlerAttachment(attachmentID: reply.attachmentID, localDeviceID: reply.localDeviceID, peers: reply.peers)
    }

    /// Sends an envelope like `send(envelope:mode:to:)`, without a task or a suspension: the
    /// request is on its way when this returns, and `completion` gets the outcome once, on the
    /// connection's loop — the daemon's `MeshSendReply` (`sent`, `queued`, `pending`), its error
    /// (kind `.daemon`, e.g. `queue-full`), or `.connectionClosed` when the connection ended
    /// before the answer (the envelope may or may not have been handled).
    ///
    /// For apps that send many envelopes one at a time and do not want a task per envelope.
    /// Called on the connection's loop (`taskExecutor`, or from `onEvent` or a completion) with
    /// nothing awaiting a reply, the request is written at once; otherwise it joins the loop's
    /// next write, with every request sent meanwhile. Requests go out in the order of the calls;
    /// like concurrent calls, the daemon may handle them concurrently. `completion` runs on the
    /// loop: keep it short and never block in it.
    ///
    /// - Throws: `MeshClientError` of kind `.invalidArgument` when the envelope cannot be sent
    ///   (a target over 255 bytes, a payload the core codec refuses, a request over the 1 MiB
    ///   one frame carries); nothing was sent and `completion` is not called.
    public func send(envelope: AnySessionSyncEnvelope, mode: SessionDeliveryMode, to peer: String? = nil,
                     completion: @escaping @Sendable (Result<MeshSendReply, MeshClientError>) -> Void) throws(MeshClientError) {
        request(.send, body: try Self.sendBody(envelope, mode: mode, to: peer), flags: .binaryBody) { answer in
            completion(answer.flatMap(Self.sendReply))
        }
    }
}
