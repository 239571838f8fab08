import ArgumentParser
import MeshLocalAPI

/// `meshctl queue drop ID`: drops one received item waiting for an app (an `inbox.ack` of it).
struct QueueDropCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drop",
        abstract: "Drop one received item waiting for an app, by the ID `meshctl queue --inbox` shows.",
        usage: "meshctl queue drop [--json] <id>",
        discussion: """
            The item is deleted as an app's ack would delete it: its event is remembered, so the \\
            sender's resend is not delivered again. Exits 1 (code not-found) when no such item waits \\
            (delivered and acknowledged, dropped, or of a feature this uid may not use).
            """)

    @ParentCommand var queue: QueueCommand
    @OptionGroup var output: JSONOption

    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The inbox item's ID.", valueName: "id"))
    var words: [String] = []

    var id: UInt64 {
        get throws { try ItemIDWords.id(in: words, noun: "inbox item", article: "an", listedBy: "meshctl queue --inbox") }
    }

    func validate() throws { _ = try id }

    func run() async throws {
        let id = try self.id
        let dropped = try await withDaemon(queue.parent, json: output.json) { try await $0.ackInbox([id]) }
        guard dropped == 1 else {
            throw CLIFailure(exitCode: 1, code: LocalAPIDataError.notFound,
                             message: "no inbox item \(id) waits for an app (see `meshctl queue --inbox`)", json: output.json)
        }
        if output.json {
            Output.jsonLine(["dropped": id])
        } else {
            print("dropped inbox item \(id)")
        }
    }
}
