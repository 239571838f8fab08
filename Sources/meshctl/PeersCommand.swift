import ArgumentParser
import Foundation
import MeshLocalAPI

/// `meshctl peers`: every paired device, one line each: name, short ID, channel, path, last
/// seen, RTT; `--wide` adds clock offset, lease, every known address and why the last channel
/// closed.
struct PeersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "peers", abstract: "List paired devices and the state of their channels.")

    @ParentCommand var parent: Meshctl

    @Flag(help: "Print a JSON array of peers (keys deviceID, name, channel, addresses, …).")
    var json = false

    @Flag(help: "Also show the clock offset, the reachability lease, every known address and why the last channel closed.")
    var wide = false

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
        let table = PeersTable(peers: peers, now: Date().timeIntervalSince1970)
        Output.table(wide ? table.wideHeader : table.header, wide ? table.wideRows : table.rows)
    }
}

/// The rows `meshctl peers` prints, worked out at `now` (seconds since 1970).
struct PeersTable {
    var peers: [PeerStatus]
    var now: Double

    let header = ["NAME", "DEVICE", "CHANNEL", "PATH", "LAST SEEN", "RTT", "JOINED"]
    var wideHeader: [String] { header + ["CLOCK OFFSET", "LEASE", "LAST CLOSE", "ADDRESSES"] }

    var rows: [[String]] {
        peers.map { peer in
            [peer.name, Output.shortID(peer.deviceID), Self.channel(peer), Self.path(peer), lastSeen(peer),
             peer.rttMilliseconds.map { String(format: "%.2f ms", $0) } ?? "-", peer.joined.map(Output.visible) ?? "-"]
        }
    }

    var wideRows: [[String]] {
        zip(peers, rows).map { peer, row in
            row + [
                Self.offset(peer),
                peer.leaseExpires.map { $0 > now ? "\(Output.duration($0 - now)) left" : "expired" } ?? "-",
                lastClose(peer),
                peer.addresses.isEmpty ? "-" : peer.addresses.map { "\($0.address) (\($0.source.rawValue))" }.joined(separator: ", "),
            ]
        }
    }

    /// The channel state; an active channel whose lease ran out says so.
    static func channel(_ peer: PeerStatus) -> String {
        peer.channel == .active && !peer.reachable ? "active, silent" : peer.channel.rawValue
    }

    /// Where the channel's datagrams go, with how that address was learned when known.
    static func path(_ peer: PeerStatus) -> String {
        guard peer.channel == .active else { return "-" }
        guard let path = peer.path else { return "TCP only" }
        guard let known = peer.addresses.first(where: { $0.address == path }) else { return path }
        return "\(path) (\(known.source.rawValue))"
    }

    /// `just now`, `4s ago`, `2m 05s ago`, or `not since start`.
    func lastSeen(_ peer: PeerStatus) -> String {
        guard let seen = peer.lastSeen else { return "not since start" }
        let age = now - seen
        return age < 1 ? "just now" : "\(Output.duration(age)) ago"
    }

    /// Why the last channel closed and how long ago, or `-` when none closed since start.
    func lastClose(_ peer: PeerStatus) -> String {
        guard let reason = peer.lastCloseReason else { return "-" }
        guard let closed = peer.lastClosed else { return reason }
        return "\(reason) (\(now - closed < 1 ? "just now" : "\(Output.duration(now - closed)) ago"))"
    }

    static func offset(_ peer: PeerStatus) -> String {
        guard let offset = peer.clockOffsetMilliseconds else { return "-" }
        let error = peer.clockOffsetErrorMilliseconds.map { String(format: " ± %.2f", $0) } ?? ""
        return String(format: "%+.2f", offset) + error + " ms"
    }
}
