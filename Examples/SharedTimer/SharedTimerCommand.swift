import ArgumentParser
import Foundation
import MeshLocalAPI
import SessionMesh
import SessionMeshClient

/// `shared-timer`: a stopwatch shared by paired devices through their `meshd`.
///
/// Reads commands on stdin, one per line — `start`, `pause`, `resume`, `lap`, `show [MICROS]`,
/// `close`, `quit` — and prints what happens, here and on the other devices.
@main
struct SharedTimerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shared-timer",
        abstract: "A stopwatch shared by paired devices through meshd (SessionMesh example).",
        discussion: """
            Commands on stdin, one per line: start, pause, resume, lap, show [MICROS] (elapsed time now, \
            or at MICROS microseconds since 1970), close (ends the session for every device), quit. \
            Without --session it joins the newest open session of the feature, or starts a new one.
            """)

    @Option(help: ArgumentHelp("The daemon's socket. Default: $MESH_SOCKET, else the user daemon's, else /run/sessionmesh/meshd.sock.", valueName: "PATH"))
    var socket: String?

    @Option(help: "The feature the timer syncs as.")
    var feature = "shared-timer"

    @Option(help: ArgumentHelp("The session to join (UUID).", valueName: "UUID"))
    var session: String?

    func validate() throws {
        if let session, UUID(uuidString: session) == nil { throw ValidationError("--session must be a UUID") }
        guard !feature.isEmpty, feature.utf8.count <= 255 else { throw ValidationError("--feature must be 1–255 bytes") }
    }

    func run() async throws {
        let socketPath = socket ?? Self.defaultSocket()
        let client: MeshClient
        do {
            client = try await MeshClient.connect(socketPath: socketPath)
        } catch {
            throw Failure("cannot reach meshd at \(socketPath): \(error)")
        }
        let status = try await client.status()
        let sessionID = try await joinOrStart(client, owner: status.name)

        // The device ID is this install's stable identity: the engine numbers its events under
        // it, and a restarted app continues the numbering from the snapshot it catches up from.
        let peer = SessionPeer(id: status.deviceID, deviceClass: .desktop, appInstanceID: UUID().uuidString, topology: .localNetwork)
        let transport = DaemonSessionSyncTransport(socketPath: socketPath, localPeer: peer, features: [feature], sessionID: sessionID)
        let engine = TimerEngine(
            sessionID: sessionID, featureID: feature, localPeer: peer, initialState: TimerState(),
            reducer: TimerReducer(), conflictPolicy: AcceptAllConflictPolicy(),
            configuration: SessionSyncEngineConfiguration(eventPayloadType: TimerPayload.event, statePayloadType: TimerPayload.state))
        let timer = SharedTimer(engine: engine, transport: transport, client: client, now: { Date() }, print: Self.say)

        try await transport.start()
        try await timer.catchUp()
        Self.say("ready: device \(SharedTimer.short(status.deviceID)) (\(status.name)), feature \(feature), session \(sessionID.uuidString.lowercased())")

        let envelopes = transport.receiveEnvelopes()
        let snapshots = transport.receiveSnapshots()
        let requests = transport.receiveSnapshotRequests()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await envelope in envelopes { await timer.receive(envelope) } }
            group.addTask { for await snapshot in snapshots { await timer.receive(snapshot) } }
            group.addTask { for await request in requests { await timer.answer(request) } }
            group.addTask { await Self.readCommands(timer) }
            await group.next()    // stdin ended, or `close`/`quit`
            group.cancelAll()
            await transport.stop()
        }
        await client.close()
    }

    /// The `--session`, else the newest open session of the feature, else a new announced one.
    private func joinOrStart(_ client: MeshClient, owner: String) async throws -> UUID {
        if let session, let id = UUID(uuidString: session) {
            try await client.announceSession(sessionID: id, featureID: feature, owner: owner)
            return id
        }
        if let open = try await client.sessions(featureID: feature).first(where: { $0.status != "closed" }) {
            return open.sessionID
        }
        let id = UUID()
        try await client.announceSession(sessionID: id, featureID: feature, owner: owner)
        return id
    }

    /// Runs stdin commands until `close`, `quit` or the end of input.
    private static func readCommands(_ timer: SharedTimer) async {
        for await line in StandardInputLines.stream() {
            let words = line.split(separator: " ").map(String.init)
            guard let command = words.first else { continue }
            do {
                switch command {
                case "start", "pause", "resume", "lap":
                    if let action = TimerEvent.Action(rawValue: command) { try await timer.tap(action) }
                case "show":
                    let instant = words.dropFirst().first.flatMap(Int64.init).map(UnixMicros.date)
                    say(await timer.show(at: instant))
                case "close":
                    let reply = try await timer.close()
                    say("session closed: delivered to \(reply.delivered.count) device(s), queued for \(reply.queued.count)")
                    return
                case "quit":
                    return
                default:
                    say("unknown command \(command); use start, pause, resume, lap, show, close or quit")
                }
            } catch {
                say("\(command) failed: \(error)")
            }
        }
    }

    /// Writes one line to stdout at once. Not through stdio: `fflush(nil)` would also take
    /// stdin's lock, which the reader thread holds while it waits for the next command.
    @Sendable static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// `$MESH_SOCKET`, the user daemon's socket when it exists, else the system daemon's.
    static func defaultSocket() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["MESH_SOCKET"], !path.isEmpty { return path }
        let user: String? = if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            runtime + "/sessionmesh/meshd.sock"
        } else if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            state + "/sessionmesh/meshd.sock"
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            home + "/.local/state/sessionmesh/meshd.sock"
        } else {
            nil
        }
        if let user, FileManager.default.fileExists(atPath: user) { return user }
        return "/run/sessionmesh/meshd.sock"
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

/// Lines of stdin as an async stream, read on a thread of their own (reading blocks).
enum StandardInputLines {
    static func stream() -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                while let line = readLine() { continuation.yield(line.trimmingCharacters(in: .whitespaces)) }
                continuation.finish()
            }
            thread.start()
        }
    }
}
