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

    // Collected as words, not parsed as a number by the parser, so that `-1` is refused as a bad
    // ID instead of being read as an unknown option (and the ID reported as missing).
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The transfer's ID.", valueName: "id"))
    var words: [String] = []

    /// The one ID given. Item IDs are SQLite row IDs; the daemon would refuse a larger one anyway.
    var id: UInt64 {
        get throws {
            guard let word = words.first else { throw ValidationError("Missing expected argument '<id>'") }
            guard words.count == 1 else {
                throw ValidationError("expected one transfer ID, got \(words.count): \(words.joined(separator: " "))")
            }
            guard let id = UInt64(word), id >= 1, id <= UInt64(Int64.max) else {
                throw ValidationError("'\(word)' is not a transfer ID: <id> is a number from 1 to \(Int64.max), as `meshctl queue` shows it")
            }
            return id
        }
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
