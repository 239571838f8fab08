import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh

extension LocalAPIDispatcher {
    /// The reply to `request` when it can be performed at once on `loop`, without a task or a
    /// suspension: a non-reliable `send` to a known target, on a connection served by the
    /// router's own loop. Nil: perform it the usual way (`perform`), with the same result.
    ///
    /// With `sendNow`, the datagrams the realtime items of this loop turn queued so far, this
    /// one's last, leave before the reply is made (the caller knows no other request follows at
    /// once); otherwise they wait for `flushImmediateSends`, packed with what follows.
    ///
    /// Must be called on `loop`.
    func performImmediately(_ request: LocalAPIRequest, uid: UInt32?, on loop: any EventLoop, sendNow: Bool = false) -> SendReply? {
        guard let (router, mode, target, metadata, encoded) = immediateSend(request, uid: uid, on: loop) else { return nil }
        guard let outcome = router.onLoop({ router in
            let outcome = router.sendImmediately(metadata, encoded: encoded, mode: mode, to: target, atOnce: sendNow)
            // What earlier requests of the burst queued leaves now too, with this one's.
            if sendNow, outcome != nil { router.flushRealtimeNow() }
            return outcome
        }) else {
            return nil
        }
        return SendReply(eventID: metadata.eventID, outcome: outcome)
    }

    /// Starts a reliable `send` at once on `loop`, without a task (`DeliveryRouter.enqueueReliableNow`):
    /// `reply` runs on `loop` with the reply body or the error once the item is durable for
    /// every target (the same reply `perform` gives). False: perform it the usual way.
    ///
    /// Must be called on `loop`.
    func startReliableImmediately(_ request: LocalAPIRequest, uid: UInt32?, on loop: any EventLoop,
                                  reply: @escaping (Result<ByteBuffer, LocalAPIErrorBody>) -> Void) -> Bool {
        guard let (router, mode, target, metadata, encoded) = immediateSend(request, uid: uid, on: loop),
              mode == DeliveryItem.Kind.reliableEnvelope.rawValue else { return false }
        let eventID = metadata.eventID
        let reply = NIOLoopBound(reply, eventLoop: loop)
        return router.onLoop { router in
            router.enqueueReliableNow(metadata, encoded: encoded, to: target) { result in
                switch result {
                case .success(let outcome): reply.value(.success(Self.sendReplyBody(eventID: eventID, outcome: outcome)))
                case .failure(let error): reply.value(.failure(LocalAPIErrorBody(error)))
                }
            }
        }
    }

    /// The parts of `request` when it is a `send` that may be started on `loop` at once: the
    /// router runs on `loop` and the feature is allowed for `uid` (a refused one takes the usual
    /// path, which answers with the error).
    private func immediateSend(_ request: LocalAPIRequest, uid: UInt32?, on loop: any EventLoop)
        -> (router: DeliveryRouter, mode: UInt8, target: String?, metadata: SessionSyncMetadata, encoded: [UInt8])? {
        guard let router, router.loop === loop, case .send(let mode, let target, let metadata, let encoded) = request else {
            return nil
        }
        if let list = featureAllowList, !list.allows(uid: uid, feature: metadata.featureID) { return nil }
        return (router, mode, target, metadata, encoded)
    }

    /// Sends the realtime datagrams the immediate sends of this loop turn queued (packed per
    /// peer) now, instead of at the end of the turn. Call on `loop` when a read burst is done,
    /// before flushing its replies.
    func flushImmediateSends(on loop: any EventLoop) {
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
