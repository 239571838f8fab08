import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh

/// Who asked for a request, on which connection: what the dispatcher needs besides the request.
struct LocalAPIRequestContext: Sendable {
    /// The client's credentials (nil: unknown).
    var credentials: PeerCredentials?
    /// The request's id (an attachment's events carry its attach's id).
    var requestID: UInt32 = 0
    /// The connection (nil for a request performed without one, which cannot `attach`).
    var connection: LocalAPIConnectionContext?
    /// For an attach on a connection: whether it has room (`LocalAPIConnectionState`).
    var attach: LocalAPIAttachReservation?
}

/// A reply body ready to write: bytes, or a `send` reply written straight into the
/// connection's output without a buffer of its own.
enum LocalAPIReplyBody: Equatable {
    case bytes(ByteBuffer)
    case send(LocalAPIDispatcher.SendReply)

    /// Its length in bytes.
    var length: Int {
        switch self {
        case .bytes(let body): body.readableBytes
        case .send(let reply): reply.bodyLength
        }
    }

    /// Writes it (exactly `length` bytes) at the end of `buffer`.
    func write(to buffer: inout ByteBuffer) {
        switch self {
        case .bytes(var body): buffer.writeBuffer(&body)
        case .send(let reply): reply.write(to: &buffer)
        }
    }
}

/// The reply to a request: its body, or the error to send.
typealias LocalAPIReply = Result<LocalAPIReplyBody, LocalAPIErrorBody>

/// How `LocalAPIDispatcher.start` goes on with a request.
enum LocalAPIPerforming {
    /// Answered within the call (`answer` is not made).
    case answered(LocalAPIReply)
    /// `answer` will be called on the loop, once the router is done (a reliable send's commit).
    case answerComes
    /// Performed by this task (tracked by `requestTasks`); `answer` will be called on the loop when it ends.
    case task(Task<Void, Never>)
}

extension LocalAPIDispatcher {
    /// Starts `start`'s request for a connection served on `loop` (call it on `loop`). The one
    /// way requests are performed: what the router can do without suspending — a `send` to a
    /// known target, when the router runs on `loop` and `start.mayAnswerAtOnce` — is done in
    /// the call (a realtime send answered at once, a reliable send answered when its commit is
    /// durable); anything else is performed by a task on the router's executor, whose reply
    /// comes back to `loop`. Either way the reply is the one `perform` gives. `answer` makes
    /// the callback for a reply that comes later; a request answered within the call makes none.
    ///
    /// With `start.sendNow`, the realtime datagrams this loop turn queued so far, this one's
    /// last, leave before the reply is made (no other request follows at once); otherwise they
    /// wait for `flushRealtime`, packed with what follows.
    func start(_ start: LocalAPIStart, context: LocalAPIRequestContext, on loop: any EventLoop,
               answer makeAnswer: () -> (LocalAPIReply) -> Void) -> LocalAPIPerforming {
        let request = start.pending.request
        if start.mayAnswerAtOnce, let router, router.loop === loop,
           case .send(let mode, let target, let metadata, let encoded) = request,
           featureAllowList?.allows(uid: context.credentials?.uid, feature: metadata.featureID) ?? true {
            let owner = context.credentials?.uid
            if mode != DeliveryItem.Kind.reliableEnvelope.rawValue {
                let sendNow = start.sendNow
                if let outcome = router.onLoop({ router in
                    let outcome = router.sendImmediately(metadata, encoded: encoded, mode: mode, to: target, atOnce: sendNow,
                                                           owner: owner)
                    // What earlier requests of the burst queued leaves now too, with this one's.
                    if sendNow, outcome != nil { router.flushRealtimeNow() }
                    return outcome
                }) {
                    return .answered(.success(.send(SendReply(eventID: metadata.eventID, outcome: outcome))))
                }
            } else {
                let eventID = metadata.eventID
                let answer = NIOLoopBound(makeAnswer(), eventLoop: loop)
                let started = router.onLoop { router in
                    router.enqueueReliableNow(metadata, encoded: encoded, to: target, owner: owner) { result in
                        switch result {
                        case .success(let outcome): answer.value(.success(.send(SendReply(eventID: eventID, outcome: outcome))))
                        case .failure(let error): answer.value(.failure(LocalAPIErrorBody(error)))
                        }
                    }
                }
                if started { return .answerComes }
            }
        }
        // On the router's loop when this connection is served there: the request, the router and
        // the reply then stay on one thread.
        let executor = router.flatMap { $0.loop === loop ? $0.taskExecutor : nil }
        let answerOnLoop = NIOLoopBound(makeAnswer(), eventLoop: loop)
        let dispatcher = self
        return .task(requestTasks.start(executorPreference: executor) {
            let reply = await dispatcher.perform(request, context: context).map(LocalAPIReplyBody.bytes)
            if loop.inEventLoop {
                answerOnLoop.value(reply)
            } else {
                loop.execute { answerOnLoop.value(reply) }
            }
        })
    }

    /// Sends the realtime datagrams the sends of this loop turn queued (packed per peer) now,
    /// instead of at the end of the turn. Call on `loop` when a read burst is done, before
    /// flushing its replies.
    func flushRealtime(on loop: any EventLoop) {
        guard let router, router.loop === loop else { return }
        router.onLoop { $0.flushRealtimeNow() }
    }

    /// A `send` reply to write: its body is byte for byte what `LocalAPIJSON.encode(MeshSendReply)`
    /// writes (sorted keys, compact), without a JSON encoder, and is written straight into the
    /// connection's output (`LocalAPIFrameWriter.appendFrame`) without a buffer of its own.
    struct SendReply: Equatable {
        var eventID: UUID
        var outcome: DeliverySendOutcome

        /// The fixed text around the values, in order: before the event ID, before the outcome,
        /// before the peer count, at the end.
        private static let texts: [StaticString] = ["{\"eventID\":\"", "\",\"outcome\":\"", "\",\"peers\":", "}"]
        private static let textBytes = texts.reduce(0) { $0 + $1.utf8CodeUnitCount }

        /// The body's length in bytes: the fixed text, 36 for the event ID, the outcome and the
        /// peer count in decimal.
        var bodyLength: Int {
            Self.textBytes + 36 + outcome.outcome.utf8.count + String(outcome.peers).utf8.count
        }

        /// Writes the body (exactly `bodyLength` bytes).
        func write(to body: inout ByteBuffer) {
            body.writeStaticString(Self.texts[0])
            writeUUIDString(eventID, to: &body)
            body.writeStaticString(Self.texts[1])
            body.writeString(outcome.outcome)
            body.writeStaticString(Self.texts[2])
            body.writeString(String(outcome.peers))
            body.writeStaticString(Self.texts[3])
        }

        /// The body in a buffer of its own (for the paths that hand a body on).
        var body: ByteBuffer {
            var body = ByteBuffer()
            body.reserveCapacity(bodyLength)
            write(to: &body)
            return body
        }
    }

    /// The `send` reply's body (`SendReply`) in a buffer of its own.
    static func sendReplyBody(eventID: UUID, outcome: DeliverySendOutcome) -> ByteBuffer {
        SendReply(eventID: eventID, outcome: outcome).body
    }

    /// Writes `uuid.uuidString` (upper-case hex, 8-4-4-4-12) without formatting through
    /// `snprintf`, which Foundation's `uuidString` uses.
    static func writeUUIDString(_ uuid: UUID, to buffer: inout ByteBuffer) {
        let hex: StaticString = "0123456789ABCDEF"
        withUnsafeBytes(of: uuid.uuid) { raw in
            _ = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 36) { out in
                hex.withUTF8Buffer { digits in
                    var position = 0
                    for (index, byte) in raw.enumerated() {
                        if index == 4 || index == 6 || index == 8 || index == 10 {
                            out[position] = UInt8(ascii: "-")
                            position += 1
                        }
                        out[position] = digits[Int(byte >> 4)]
                        out[position + 1] = digits[Int(byte & 0x0F)]
                        position += 2
                    }
                }
                return 36
            }
        }
    }
}
