import ArgumentParser

/// `meshctl snapshot`: the latest-state slots.
struct SnapshotCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "snapshot",
        abstract: "Read the latest snapshots peers published.",
        subcommands: [SnapshotGetCommand.self])

    @ParentCommand var parent: Meshctl
}
