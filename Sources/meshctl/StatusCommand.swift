import ArgumentParser
import Foundation
import MeshLocalAPI

/// `meshctl status`: this device in a few lines; `--counters` adds every counter, `--json`
/// prints the daemon's status object unchanged.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show this device: ID, name, listen address, discovery, paired devices, queue, warnings.",
        discussion: "Warnings are counters of things that went wrong since the daemon started. --counters lists every counter; --json prints the daemon's status object (with all counters) for scripts.")

    @ParentCommand var parent: Meshctl

    @Flag(help: "Print JSON.")
    var json = false

    @Flag(help: "Also list every counter.")
    var counters = false

    func run() async throws {
        if json {
            Output.json(try await withDaemon(parent, json: true) { try await $0.status() })
            return
        }
        let summary = try await withDaemon(parent, json: false) { client in
            let status = try await client.status()
            let peers = try await client.peers()
            // The queue lists only features this uid may use; a daemon that refuses it
            // still gets a summary.
            let queued = try? await client.queue()
            return StatusSummary(status: status, peers: peers, queued: queued)
        }
        Output.table(nil, summary.rows)
        if counters {
            print("counters")
            Output.table(nil, summary.status.counters.sorted { $0.key < $1.key }.map { ["  " + $0.key, "\($0.value)"] })
        }
    }
}
