import MeshLocalAPI
import NIOCore

/// A request on its way to the daemon, with the promise its reply or error frame completes.
struct LocalAPIClientRequest: Sendable {
    var operation: LocalAPIOperation
    var flags: LocalAPIFrame.Flags
    var body: ByteBuffer
    var promise: EventLoopPromise<LocalAPIFrame>
    /// For `attach`: where the events carrying this request's id go.
    var events: AsyncStream<MeshClientEvent>.Continuation? = nil
}

/// Matches reply and error frames to requests by request id.
///
/// Assigns ids (1, 2, … wrapping past 0), keeps the pending promises, and fails them all when
/// the connection ends or the daemon sends a connection-level error (request id 0).
///
/// Event frames go to the stream of the attach request whose id they carry (registered before
/// the request is written, so events that follow the reply at once are never missed);
/// `events.dropped` (request id 0) goes to every stream. The streams finish when the
/// connection ends, or when an attach fails.
final class LocalAPIClientHandler: ChannelDuplexHandler {
    typealias InboundIn = LocalAPIFrame
    typealias OutboundIn = LocalAPIClientRequest
    typealias OutboundOut = LocalAPIFrame

    private var pending: [UInt32: EventLoopPromise<LocalAPIFrame>] = [:]
    private var nextID: UInt32 = 1
    private let socketPath: String
    private var closedError: MeshClientError?
    private var eventSinks: [UInt32: AsyncStream<MeshClientEvent>.Continuation] = [:]

    init(socketPath: String) { self.socketPath = socketPath }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        if let closedError {
            request.promise.fail(closedError)
            promise?.fail(closedError)
            request.events?.finish()
            return
        }
        let id = nextID
        nextID = nextID == UInt32.max ? 1 : nextID + 1
        pending[id] = request.promise
        if let events = request.events { eventSinks[id] = events }
        let frame = LocalAPIFrame(kind: .request, operation: request.operation, flags: request.flags,
                                  requestID: id, body: request.body)
        context.write(wrapOutboundOut(frame), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.kind {
        case .reply, .error:
            if frame.requestID == 0, frame.kind == .error {
                let body = (try? LocalAPIJSON.decode(LocalAPIErrorBody.self, from: frame.body, operation: frame.operation))
                    ?? LocalAPIErrorBody(code: "unknown", message: "meshd reported a connection error")
                failAll(MeshClientError.daemon(body))
            } else if let promise = pending.removeValue(forKey: frame.requestID) {
                if frame.kind == .error, let sink = eventSinks.removeValue(forKey: frame.requestID) { sink.finish() }
                promise.succeed(frame)
            }
        case .event:
            deliver(frame)
        case .request:
            // The daemon never sends requests; ignore one rather than fail the connection.
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(MeshClientError.connectionClosed(socketPath: socketPath))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failAll(MeshClientError.protocolViolation("\(error)"))
        context.close(promise: nil)
    }

    private func deliver(_ frame: LocalAPIFrame) {
        let event: MeshClientEvent
        do {
            event = MeshClientEvent(try LocalAPIDataEvent.decode(frame))
        } catch {
            event = .undecodable(operation: frame.operation.name, reason: error.message)
        }
        if frame.requestID == 0 {
            for sink in eventSinks.values { sink.yield(event) }
        } else if let sink = eventSinks[frame.requestID] {
            sink.yield(event)
        }
    }

    private func failAll(_ error: MeshClientError) {
        if closedError == nil { closedError = error }
        let promises = pending.values
        pending.removeAll()
        for promise in promises { promise.fail(error) }
        let sinks = eventSinks.values
        eventSinks.removeAll()
        for sink in sinks { sink.finish() }
    }
}
