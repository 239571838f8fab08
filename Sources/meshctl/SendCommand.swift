import ArgumentParser
import Foundation
import MeshLocalAPI
import SessionMesh
import SessionMeshClient

/// `meshctl send`: send one envelope, or publish one snapshot, from the command line.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send an envelope (or publish a snapshot) to paired devices.",
        discussion: """
            PAYLOAD is sent as UTF-8 text; '-' (or no PAYLOAD) reads the payload bytes from stdin.
            The envelope gets a fresh event ID, source peer ID --source (default meshctl@HOST), session --session \
            (default: a random session per feature and device, made on the first send and kept in \
            $XDG_STATE_HOME/sessionmesh/meshctl-sessions.json, so successive sends form one stream), and sequence --sequence \
            (default: the current time in milliseconds, increasing across runs).
            --mode snapshot publishes a snapshot into the latest-state slot instead, with revision --revision \
            (default: the current time in milliseconds).
            """)

    /// `--mode` values.
    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case realtime, reliable, snapshot, ack
    }

    @ParentCommand var parent: Meshctl
    @OptionGroup var target: FeatureOptions
    @OptionGroup var output: JSONOption

    @Option(help: ArgumentHelp("The session UUID.", valueName: "UUID"))
    var session: String?

    @Option(help: "realtime, reliable, snapshot or ack.")
    var mode: Mode = .reliable

    @Option(help: ArgumentHelp("One paired device (full or short ID); default: every paired device.", valueName: "DEVICE"))
    var to: String?

    @Option(help: ArgumentHelp("The envelope's source peer ID.", valueName: "ID"))
    var source: String?

    // .unconditional: a negative number is this option's (bad) value, not an unknown option.
    @Option(parsing: .unconditional, help: ArgumentHelp("The envelope's sequence number.", valueName: "N"))
    var sequence: UInt64?

    @Option(parsing: .unconditional, help: ArgumentHelp("The snapshot's revision (--mode snapshot).", valueName: "N"))
    var revision: UInt64?

    @Option(name: .customLong("payload-type"), help: ArgumentHelp("The payload type name.", valueName: "NAME"))
    var payloadType = "text"

    @Argument(help: "The payload text, or '-' for stdin.")
    var payload: String?

    func validate() throws {
        if let session, UUID(uuidString: session) == nil { throw ValidationError("--session must be a UUID") }
        if revision != nil, mode != .snapshot { throw ValidationError("--revision applies only to --mode snapshot") }
        if let to, to.isEmpty || to.utf8.count > 255 { throw ValidationError("--to must be a device ID") }
        if payload == nil, isatty(STDIN_FILENO) == 1 {
            throw ValidationError("give a PAYLOAD, or pipe the payload in and pass '-'")
        }
    }

    func run() async throws {
        let bytes = try readPayload()
        let now = Date()
        let millis = UInt64(max(0, now.timeIntervalSince1970 * 1000))
        let feature = target.feature
        let sessionID: UUID
        if let given = session.flatMap(UUID.init(uuidString:)) {
            sessionID = given
        } else {
            let device = try await withDaemon(parent, json: output.json) { try await $0.status().deviceID }
            sessionID = DefaultSessions().session(deviceID: device, feature: feature)
        }
        let metadata = SessionSyncMetadata(
            sessionID: sessionID,
            featureID: feature, sourcePeerID: source ?? Self.defaultSource(), eventID: UUID(),
            sequence: sequence ?? millis, causalTimestamp: now, payloadType: payloadType)
        if mode == .snapshot {
            let snapshot = AnySessionSyncSnapshot(metadata: metadata, revision: revision ?? millis, state: bytes)
            let reply = try await withDaemon(parent, json: output.json) { try await $0.publishSnapshot(snapshot, to: to) }
            if output.json {
                Output.jsonLine(reply)
            } else {
                print(reply.stored ? "published snapshot revision \(reply.revision) of \(target.feature)"
                                   : "not stored: the slot already holds revision \(reply.revision), equal or higher")
            }
            return
        }
        let envelope = AnySessionSyncEnvelope(metadata: metadata, payload: bytes)
        let deliveryMode: SessionDeliveryMode = switch mode {
        case .realtime: .realtimeBestEffort
        case .ack: .acknowledgement
        case .reliable, .snapshot: .reliableEventually
        }
        let reply = try await withDaemon(parent, json: output.json) { try await $0.send(envelope: envelope, mode: deliveryMode, to: to) }
        if output.json {
            Output.jsonLine(reply)
        } else {
            let peers = reply.peers == 1 ? "1 peer" : "\(reply.peers) peers"
            print("\(reply.outcome.rawValue) \(reply.eventID.uuidString) (\(mode.rawValue), \(peers))")
            if reply.peers == 0 { Self.noPeersNote() }
        }
    }

    /// The payload: the argument, or stdin read up to the most one local API frame can carry
    /// (so a huge or endless stdin is refused at once instead of filling memory).
    private func readPayload() throws -> Data {
        let limit = LocalAPIWireFormat.defaultMaximumBodyLength
        let data: Data
        if let payload, payload != "-" {
            data = Data(payload.utf8)
        } else {
            var buffer = Data()
            while buffer.count <= limit {
                let chunk: Data?
                do {
                    chunk = try FileHandle.standardInput.read(upToCount: limit + 1 - buffer.count)
                } catch {
                    throw CLIFailure(exitCode: CLIFailure.usage, code: LocalAPIErrorBody.Code.invalidArgument,
                                     message: "cannot read the payload from stdin: \(error.localizedDescription)", json: output.json)
                }
                guard let chunk, !chunk.isEmpty else { break }
                buffer.append(chunk)
            }
            data = buffer
        }
        // Over the frame limit for certain; a payload just under it may still not fit with the
        // envelope's metadata, which the client library refuses before sending, with the sizes.
        guard data.count <= limit else {
            throw CLIFailure(exitCode: CLIFailure.usage, code: LocalAPIErrorBody.Code.invalidArgument,
                             message: "the payload is larger than \(limit) bytes, the most one message (local API frame) can carry",
                             json: output.json)
        }
        return data
    }

    /// Tells a person (on stderr, so scripts reading stdout are unaffected) that nothing left
    /// this device because no device is paired yet.
    static func noPeersNote() {
        FileHandle.standardError.write(Data("meshctl: no paired devices, so nothing was sent; pair one with `meshctl pair`\n".utf8))
    }

    /// `meshctl@HOST`.
    static func defaultSource() -> String {
        "meshctl@" + ProcessInfo.processInfo.hostName.prefix(200)
    }
}
