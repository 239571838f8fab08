import ArgumentParser
import Foundation
import MeshLocalAPI

/// `meshctl status`: the daemon's identity, address, uptime and counters.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show this device's ID, name, listen address, socket, uptime and counters.")

    @ParentCommand var parent: Meshctl

    @Flag(help: "Print JSON.")
    var json = false

    func run() async throws {
        let status = try await withDaemon(parent, json: json) { try await $0.status() }
        if json {
            Output.json(status)
            return
        }
        Output.table(nil, [
            ["device ID", status.deviceID],
            ["name", status.name],
            ["listen", status.listen],
            ["socket", status.socket],
            ["uptime", Output.duration(status.uptimeSeconds)],
        ])
        if !status.counters.isEmpty {
            print("counters")
            Output.table(nil, status.counters.sorted { $0.key < $1.key }.map { ["  " + $0.key, "\($0.value)"] })
        }
    }
}
