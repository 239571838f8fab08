import MeshLocalAPI
import NIOCore

/// A request on its way to the daemon, with the promise its reply or error frame completes.
struct LocalAPIClientRequest: Sendable {
    var operation: LocalAPIOperation
    var flags: LocalAPIFrame.Flags
    var body: ByteBuffer
    var promise: EventLoopPromise<LocalAPIFrame>
}

/// Matches reply and error frames to requests by request id.
///
/// Assigns ids (1, 2, … wrapping past 0), keeps the pending promises, and fails them all when
/// the connection ends or the daemon sends a connection-level error (request id 0).
final class LocalAPIClientHandler: ChannelDuplexHandler {
    typealias InboundIn = LocalAPIFrame
    typealias OutboundIn = LocalAPIClientRequest
    typealias OutboundOut = LocalAPIFrame

    private var pending: [UInt32: EventLoopPromise<LocalAPIFrame>] = [:]
    private var nextID: UInt32 = 1
    private let socketPath: String
    private var closedError: MeshClientError?

    init(socketPath: String) { self.socketPath = socketPath }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        if let closedError {
            request.promise.fail(closedError)
            promise?.fail(closedError)
            return
        }
        let id = nextID
        nextID = nextID == UInt32.max ? 1 : nextID + 1
        pending[id] = request.promise
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
                promise.succeed(frame)
            }
        case .event, .request:
            // Events arrive once subscriptions exist (issue 5); a request from the daemon is ignored.
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

    private func failAll(_ error: MeshClientError) {
        if closedError == nil { closedError = error }
        let promises = pending.values
        pending.removeAll()
        for promise in promises { promise.fail(error) }
    }
}
