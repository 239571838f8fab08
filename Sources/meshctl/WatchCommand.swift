import ArgumentParser
import Foundation
import MeshLocalAPI
import SessionMeshClient

/// `meshctl watch`: attach to a feature and print everything that arrives, one line per event.
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print envelopes, snapshots, requests, reachability, anchors and session changes of a feature as they arrive.",
        discussion: """
            Attaches to the feature like an app: pending reliable items arrive first. Each reliable envelope is \
            acknowledged (removed from the daemon's inbox) after its line is printed, unless --no-ack; an item \
            printed but not yet acknowledged when watch stops comes again next time, marked REDELIVERY.
            The first line says the watch is attached (type "attached"). Payloads print as UTF-8 text when \
            printable, else as base64. With --json every line is one JSON object (see docs/LOCAL-API.md).
            Exits 0 after --limit envelopes, 3 when the daemon goes away (unless --reconnect), 130 on Ctrl-C.
            """)

    @ParentCommand var parent: Meshctl
    @OptionGroup var target: FeatureOptions
    @OptionGroup var output: JSONOption

    @Option(help: ArgumentHelp("Only events of this session (UUID).", valueName: "UUID"))
    var session: String?

    @Flag(name: .customLong("no-ack"), help: "Do not acknowledge reliable items (they stay in the daemon's inbox).")
    var noAck = false

    // .unconditional: a negative number is this option's (bad) value, not an unknown option.
    @Option(parsing: .unconditional, help: ArgumentHelp("Exit 0 after this many envelopes.", valueName: "N"))
    var limit: Int?

    @Option(parsing: .unconditional, help: ArgumentHelp("When the daemon goes away, keep trying to reattach for up to SECONDS per outage.", valueName: "SECONDS"))
    var reconnect: Double?

    func validate() throws {
        if let session, UUID(uuidString: session) == nil { throw ValidationError("--session must be a UUID") }
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        if let reconnect, !(0.1...3600).contains(reconnect) { throw ValidationError("--reconnect must be 0.1–3600 seconds") }
    }

    func run() async throws {
        let interrupts = InterruptSignal.stream()
        let outcome: Result<Void, any Error>? = await withTaskGroup(of: Result<Void, any Error>?.self) { group in
            group.addTask {
                do { try await watch(); return .success(()) } catch { return .failure(error) }
            }
            group.addTask {
                for await _ in interrupts { return nil }
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        switch outcome {
        case .success: return
        case .failure(let error): throw error
        case nil:
            fflush(nil)
            throw ExitCode(CLIFailure.interrupted)
        }
    }

    private func watch() async throws {
        let sessionID = session.flatMap(UUID.init(uuidString:))
        var printer = WatchPrinter(json: output.json)
        var envelopes = 0
        while true {
            let (client, attachment) = try await connectAndAttach(sessionID: sessionID)
            var attached = WatchRecord(type: "attached", time: Date())
            attached.peer = attachment.localDeviceID
            attached.feature = target.feature
            attached.detail = "\(attachment.peers.count) paired, \(attachment.peers.filter(\.reachable).count) reachable"
            printer.print(attached)
            let acker = AckBatcher(client: client)
            for await event in attachment.events {
                printer.print(WatchRecord(event, now: Date()))
                guard case .envelope(let envelope) = event else { continue }
                if envelope.inboxID != 0, !noAck { await acker.add(envelope.inboxID) }
                envelopes += 1
                if let limit, envelopes >= limit {
                    await acker.flush()
                    await client.close()
                    return
                }
            }
            await acker.flush()
            await client.close()
            guard reconnect != nil else {
                throw CLIFailure(exitCode: CLIFailure.unreachable, code: "connection-closed",
                                 message: "meshd closed the connection (socket \(parent.socketPath))", json: output.json)
            }
            FileHandle.standardError.write(Data("meshctl: meshd went away; reattaching…\n".utf8))
        }
    }

    /// Connects and attaches. With `--reconnect`, any failure (no socket yet, the daemon still
    /// starting, the connection dropping mid-attach) is retried every 100 ms for up to that many
    /// seconds; without it the first failure ends the command.
    private func connectAndAttach(sessionID: UUID?) async throws -> (MeshClient, MeshAttachment) {
        let deadline = Date().addingTimeInterval(reconnect ?? 0)
        while true {
            var client: MeshClient?
            do {
                let connected = try await parent.connect()
                client = connected
                let attachment = try await connected.attach(features: [target.feature], sessionID: sessionID, app: "meshctl watch")
                return (connected, attachment)
            } catch {
                await client?.close()
                let invalid = (error as? MeshClientError)?.kind == .invalidArgument
                guard reconnect != nil, !invalid, Date() < deadline, !Task.isCancelled else { throw CLIFailure(error, json: output.json) }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}

/// Writes watch records as JSON lines or aligned text, flushing each line.
struct WatchPrinter {
    let json: Bool

    mutating func print(_ record: WatchRecord) {
        if json {
            Output.jsonLine(record)
            return
        }
        let columns = record.columns.map(Output.visible)
        let widths = [12, 16, 8]
        let padded = columns.enumerated().map { index, cell in
            index < widths.count ? cell.padding(toLength: max(widths[index], cell.count), withPad: " ", startingAt: 0) : cell
        }
        Swift.print(padded.joined(separator: "  "))
        fflush(nil)
    }
}
