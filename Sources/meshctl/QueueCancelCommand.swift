import ArgumentParser

/// `meshctl queue cancel ID`.
struct QueueCancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel one outstanding transfer by the ID `meshctl queue` shows.",
        discussion: "Exits 1 (code not-found) when the item is no longer queued (delivered or cancelled).")

    @ParentCommand var queue: QueueCommand
    @OptionGroup var output: JSONOption

    @Argument(help: "The transfer's ID.")
    var id: UInt64

    func validate() throws {
        // Item IDs are SQLite row IDs; the daemon would refuse a larger one (exit 1) anyway.
        guard id <= UInt64(Int64.max) else {
            throw ValidationError("<id> must be a transfer ID from 1 to \(Int64.max), as `meshctl queue` shows it")
        }
    }

    func run() async throws {
        let id = self.id
        try await withDaemon(queue.parent, json: output.json) { try await $0.cancelQueued(id: id) }
        if output.json {
            Output.jsonLine(["cancelled": id])
        } else {
            print("cancelled transfer \(id)")
        }
    }
}
