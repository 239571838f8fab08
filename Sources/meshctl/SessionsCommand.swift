import ArgumentParser
import Foundation
import MeshLocalAPI

/// `meshctl sessions`: the replicated session directory.
struct SessionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sessions",
        abstract: "List sessions announced on this device and on paired devices.",
        discussion: "With --json: {\"sessions\": [{\"sessionID\", \"featureID\", \"owner\", \"status\", \"updatedAt\", \"revision\", \"sourcePeer\"?}]}.")

    @ParentCommand var parent: Meshctl
    @OptionGroup var output: JSONOption

    @Option(help: ArgumentHelp("Only sessions of this feature.", valueName: "F"))
    var feature: String?

    func validate() throws {
        if let feature, feature.isEmpty || feature.utf8.count > 255 {
            throw ValidationError("--feature must be 1–255 bytes")
        }
    }

    func run() async throws {
        let feature = self.feature
        let sessions = try await withDaemon(parent, json: output.json) { try await $0.sessions(featureID: feature) }
        if output.json {
            Output.jsonLine(MeshSessionsReply(sessions: sessions))
            return
        }
        guard !sessions.isEmpty else {
            print("no sessions")
            return
        }
        let now = Date().timeIntervalSince1970
        Output.table(["SESSION", "FEATURE", "STATUS", "OWNER", "FROM", "UPDATED", "REV"], sessions.map { session in
            [session.sessionID.uuidString, session.featureID, session.status, session.owner,
             session.sourcePeer.map(Output.shortID) ?? "this device", Output.duration(now - session.updatedAt) + " ago",
             String(session.revision)]
        })
    }
}
