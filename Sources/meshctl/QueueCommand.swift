import ArgumentParser
import Foundation
import MeshLocalAPI

/// `meshctl queue`: outstanding reliable transfers; `meshctl queue cancel ID` drops one.
struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "List outstanding transfers per peer, or cancel one.",
        subcommands: [QueueListCommand.self, QueueCancelCommand.self],
        defaultSubcommand: QueueListCommand.self)

    @ParentCommand var parent: Meshctl
}

/// `meshctl queue [list] [--json]`.
struct QueueListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List outstanding transfers: id, peer, feature, event, age, attempts, size.",
        discussion: "With --json: {\"items\": [{\"id\", \"peer\", \"featureID\", \"eventID\", \"ageSeconds\", \"attempts\", \"size\"}]}.")

    @ParentCommand var queue: QueueCommand
    @OptionGroup var output: JSONOption

    func run() async throws {
        let items = try await withDaemon(queue.parent, json: output.json) { try await $0.queue() }
        if output.json {
            Output.jsonLine(MeshQueueReply(items: items))
            return
        }
        guard !items.isEmpty else {
            print("nothing queued")
            return
        }
        Output.table(["ID", "PEER", "FEATURE", "EVENT", "AGE", "ATTEMPTS", "SIZE"], items.map { item in
            [String(item.id), Output.shortID(item.peer), item.featureID, String(item.eventID.uuidString.prefix(8)),
             Output.duration(item.ageSeconds), String(item.attempts), "\(item.size) B"]
        })
    }
}
