import ArgumentParser
import Foundation
import MeshLocalAPI
import SessionMeshClient

/// `meshctl snapshot get --feature F --peer DEVICE`: the newest snapshot a peer published, read
/// from this daemon's persisted inbound slot (works while the peer is off).
struct SnapshotGetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Show the newest snapshot of a feature received from a peer.",
        discussion: "Exits 1 (code not-found) when no snapshot of the feature has been received from the peer.")

    @ParentCommand var snapshot: SnapshotCommand
    @OptionGroup var target: FeatureOptions
    @OptionGroup var output: JSONOption

    @Option(help: ArgumentHelp("The peer (full or short device ID); default: whichever peer's is newest.", valueName: "DEVICE"))
    var peer: String?

    @Option(help: ArgumentHelp("Only this session (UUID).", valueName: "UUID"))
    var session: String?

    func validate() throws {
        if let session, UUID(uuidString: session) == nil { throw ValidationError("--session must be a UUID") }
        if let peer, peer.isEmpty || peer.utf8.count > 255 { throw ValidationError("--peer must be a device ID") }
    }

    func run() async throws {
        let feature = target.feature
        let peer = self.peer
        let sessionID = session.flatMap(UUID.init(uuidString:))
        let reply = try await withDaemon(snapshot.parent, json: output.json) {
            try await $0.latestSnapshot(featureID: feature, peer: peer, sessionID: sessionID)
        }
        guard let reply else {
            let from = peer.map { " from \($0)" } ?? ""
            throw CLIFailure(exitCode: CLIFailure.daemonError, code: LocalAPIDataError.notFound,
                             message: "no snapshot of feature '\(feature)'\(from) has been received", json: output.json)
        }
        var record = WatchRecord(.snapshot(MeshSnapshotEvent(from: reply.peer, snapshot: reply.snapshot)), now: Date())
        record.type = "snapshot"
        if output.json {
            Output.jsonLine(record)
            return
        }
        let metadata = reply.snapshot.metadata
        Output.table(nil, [
            ["peer", reply.peer],
            ["feature", metadata.featureID],
            ["session", metadata.sessionID.uuidString],
            ["revision", "\(reply.snapshot.revision)"],
            ["source", metadata.sourcePeerID],
            ["sequence", "\(metadata.sequence)"],
            ["made", Self.date(metadata.causalTimestamp)],
            ["type", metadata.payloadType],
            ["state", WatchRecord.printable(reply.snapshot.state) ?? "base64:" + reply.snapshot.state.base64EncodedString()],
        ])
    }

    private static func date(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
