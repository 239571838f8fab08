import ArgumentParser

/// `meshctl queue cancel ID`.
struct QueueCancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel one outstanding transfer by the ID `meshctl queue` shows.",
        usage: "meshctl queue cancel [--json] <id>",
        discussion: "Exits 1 (code not-found) when the item is no longer queued (delivered or cancelled).")

    @ParentCommand var queue: QueueCommand
    @OptionGroup var output: JSONOption

    // Collected as words (see `ItemIDWords`).
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The transfer's ID.", valueName: "id"))
    var words: [String] = []

    var id: UInt64 {
        get throws { try ItemIDWords.id(in: words, noun: "transfer", article: "a", listedBy: "meshctl queue") }
    }

    func validate() throws { _ = try id }

    func run() async throws {
        let id = try self.id
        try await withDaemon(queue.parent, json: output.json) { try await $0.cancelQueued(id: id) }
        if output.json {
            Output.jsonLine(["cancelled": id])
        } else {
            print("cancelled transfer \(id)")
        }
    }
}
