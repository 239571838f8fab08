import Foundation
import MeshLocalAPI
import NIOCore
import NIOPosix

/// A scripted local-API server on a Unix socket: every request frame is recorded and answered
/// by `respond` (any number of frames: a reply, an error, events…).
final class FakeDaemon: @unchecked Sendable {
    typealias Responder = @Sendable (LocalAPIFrame) -> [LocalAPIFrame]

    let socketPath: String
    private let directory: String
    private let channel: any Channel
    private let lock = NSLock()
    private var recorded: [LocalAPIFrame] = []
    private var connections: [any Channel] = []

    private init(directory: String, socketPath: String, channel: any Channel) {
        self.directory = directory
        self.socketPath = socketPath
        self.channel = channel
    }

    static func start(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
                      _ respond: @escaping Responder) async throws -> FakeDaemon {
        let directory = "/tmp/smc-" + UUID().uuidString.prefix(12).lowercased()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let socketPath = directory + "/api.sock"
        let box = Box()
        let channel = try await ServerBootstrap(group: group)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    let sync = child.pipeline.syncOperations
                    try sync.addHandler(ByteToMessageHandler(LocalAPIFrameDecoder()))
                    try sync.addHandler(MessageToByteHandler(LocalAPIFrameEncoder()))
                    try sync.addHandler(Handler(respond: respond, record: { frame, channel in box.daemon?.record(frame, channel) }))
                }
            }
            .bind(unixDomainSocketPath: socketPath).get()
        let daemon = FakeDaemon(directory: directory, socketPath: socketPath, channel: channel)
        box.daemon = daemon
        return daemon
    }

    /// Requests received so far, in order.
    var requests: [LocalAPIFrame] { lock.withLock { recorded } }

    /// Writes `frame` to every connection (e.g. an event).
    func push(_ frame: LocalAPIFrame) {
        for connection in lock.withLock({ connections }) { connection.writeAndFlush(frame, promise: nil) }
    }

    /// Closes every client connection (as a daemon restart would).
    func dropConnections() {
        for connection in lock.withLock({ connections }) { connection.close(promise: nil) }
    }

    func stop() async {
        dropConnections()
        try? await channel.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func record(_ frame: LocalAPIFrame, _ channel: any Channel) {
        lock.withLock {
            recorded.append(frame)
            if !connections.contains(where: { $0 === channel }) { connections.append(channel) }
        }
    }

    private final class Box: @unchecked Sendable {
        weak var daemon: FakeDaemon?
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = LocalAPIFrame
        typealias OutboundOut = LocalAPIFrame
        let respond: Responder
        let record: (LocalAPIFrame, any Channel) -> Void

        init(respond: @escaping Responder, record: @escaping (LocalAPIFrame, any Channel) -> Void) {
            self.respond = respond
            self.record = record
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            record(frame, context.channel)
            for answer in respond(frame) { context.write(wrapOutboundOut(answer), promise: nil) }
            context.flush()
        }
    }
}

extension LocalAPIFrame {
    /// A JSON reply to `request`.
    static func reply(to request: LocalAPIFrame, _ body: some Encodable) -> LocalAPIFrame {
        LocalAPIFrame(kind: .reply, operation: request.operation, requestID: request.requestID,
                      body: (try? LocalAPIJSON.encode(body)) ?? ByteBuffer())
    }

    /// An error reply to `request`.
    static func error(to request: LocalAPIFrame, code: String, message: String = "no") -> LocalAPIFrame {
        reply(kind: .error, to: request, LocalAPIErrorBody(code: code, message: message))
    }

    private static func reply(kind: Kind, to request: LocalAPIFrame, _ body: some Encodable) -> LocalAPIFrame {
        LocalAPIFrame(kind: kind, operation: request.operation, requestID: request.requestID,
                      body: (try? LocalAPIJSON.encode(body)) ?? ByteBuffer())
    }
}

/// Polls `condition` every 10 ms for up to `seconds`.
func eventually(_ seconds: Double = 5, _ condition: () async throws -> Bool) async rethrows -> Bool {
    try await eventually(stalledFor: seconds, progress: { 0 }, condition)
}

/// Polls `condition` every 10 ms; gives up only once `progress` (a count that grows while the
/// work advances: requests the fake daemon got, replies the app got) has not changed for
/// `seconds`. A deadline on progress rather than on the total time, which a loaded machine
/// stretches: stuck work still fails after `seconds`.
func eventually(stalledFor seconds: Double, progress: () -> Int, _ condition: () async throws -> Bool) async rethrows -> Bool {
    var seen = progress()
    var deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
        let now = progress()
        if now != seen {
            seen = now
            deadline = Date().addingTimeInterval(seconds)
        }
    }
    return try await condition()
}
