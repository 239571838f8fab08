import ArgumentParser

/// `meshctl unpair DEVICE`: forget a paired device and close its channel at once.
struct UnpairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unpair", abstract: "Remove a paired device; a live channel to it closes at once.")

    @ParentCommand var parent: Meshctl

    @Argument(help: "The device ID (full or short) as `meshctl peers` shows it.")
    var device: String

    func validate() throws {
        if device.allSatisfy(\.isWhitespace) { throw ValidationError("<device> must be a device ID, as `meshctl peers` shows it") }
    }

    func run() async throws {
        try await withDaemon(parent, json: false) { try await $0.unpair(deviceID: device) }
        print("unpaired \(device)")
    }
}
