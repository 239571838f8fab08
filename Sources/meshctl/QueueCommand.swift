import ArgumentParser
import Foundation
import MeshLocalAPI

/// `meshctl queue`: outstanding reliable transfers; `meshctl queue cancel ID` drops one;
/// `meshctl queue --inbox` lists received items waiting for an app, `meshctl queue drop ID` drops one.
struct QueueCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "List outstanding transfers per peer, or cancel one; list or drop received items waiting for an app.",
        subcommands: [QueueListCommand.self, QueueCancelCommand.self, QueueDropCommand.self],
        defaultSubcommand: QueueListCommand.self)

    @ParentCommand var parent: Meshctl
}

/// `meshctl queue [list] [--inbox] [--json]`.
struct QueueListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List outstanding transfers: id, peer, feature, event, age, attempts, size.",
        discussion: """
            With --json: {"items": [{"id", "peer", "featureID", "eventID", "ageSeconds", "attempts", "size"}]}.
            With --inbox: the received items waiting for an app instead (the oldest 1000), \
            {"items": [{"id", "peer", "featureID", "eventID", "ageSeconds", "deliveries", "size"}]} with --json; \
            `meshctl queue drop ID` drops one.
            """)

    @ParentCommand var queue: QueueCommand
    @OptionGroup var output: JSONOption

    @Flag(help: "List received items waiting for an app (the inbox) instead of outgoing transfers.")
    var inbox = false

    func run() async throws {
        if inbox { return try await runInbox() }
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

    private func runInbox() async throws {
        let items = try await withDaemon(queue.parent, json: output.json) { try await $0.inbox() }
        if output.json {
            Output.jsonLine(MeshInboxReply(items: items))
            return
        }
        guard !items.isEmpty else {
            print("nothing waiting for an app")
            return
        }
        Output.table(["ID", "FROM", "FEATURE", "EVENT", "AGE", "DELIVERIES", "SIZE"], items.map { item in
            [String(item.id), Output.shortID(item.peer), item.featureID, String(item.eventID.uuidString.prefix(8)).lowercased(),
             Output.duration(item.ageSeconds), String(item.deliveries), "\(item.size) B"]
        })
    }
}
