import ArgumentParser
import Foundation
import MeshLocalAPI

/// `meshctl peers`: every paired device with its channel, addresses, RTT, clock offset, lease.
struct PeersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "peers", abstract: "List paired devices and the state of their channels.")

    @ParentCommand var parent: Meshctl

    @Flag(help: "Print a JSON array of peers (keys deviceID, name, channel, addresses, …).")
    var json = false

    func run() async throws {
        let peers = try await withDaemon(parent, json: json) { try await $0.peers() }
        if json {
            if peers.isEmpty { print("[]") } else { Output.json(peers) }
            return
        }
        guard !peers.isEmpty else {
            print("no paired devices; pair one with `meshctl pair`")
            return
        }
        let now = Date().timeIntervalSince1970
        Output.table(["NAME", "DEVICE", "CHANNEL", "RTT", "CLOCK OFFSET", "LEASE", "ADDRESSES"], peers.map { peer in
            [
                peer.name,
                Output.shortID(peer.deviceID),
                peer.channel.rawValue,
                peer.rttMilliseconds.map { String(format: "%.2f ms", $0) } ?? "-",
                Self.offset(peer),
                peer.leaseExpires.map { $0 > now ? "\(Output.duration($0 - now)) left" : "expired" } ?? "-",
                peer.addresses.isEmpty ? "-" : peer.addresses.map { "\($0.address) (\($0.source.rawValue))" }.joined(separator: ", "),
            ]
        })
    }

    private static func offset(_ peer: PeerStatus) -> String {
        guard let offset = peer.clockOffsetMilliseconds else { return "-" }
        let error = peer.clockOffsetErrorMilliseconds.map { String(format: " ± %.2f", $0) } ?? ""
        return String(format: "%+.2f", offset) + error + " ms"
    }
}
