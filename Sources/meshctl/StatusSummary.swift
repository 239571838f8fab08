import Foundation
import MeshLocalAPI

/// `meshctl status` in words: what a person checks first, worked out from the daemon's status,
/// its peers and its queue. Pure, so every sentence can be tested without a daemon.
struct StatusSummary {
    var status: DaemonStatus
    var peers: [PeerStatus]
    /// Outstanding reliable transfers; nil when the daemon did not say (e.g. an error).
    var queued: [MeshQueueItem]?

    /// The lines to print, label and text.
    var rows: [[String]] {
        [
            ["device", "\(status.name) (\(status.deviceID))"],
            ["daemon", "meshd \(status.version ?? "(version not reported)")"],
            ["listening", "\(status.listen) (UDP and TCP)"],
            ["local API", status.socket],
            ["up", Output.duration(status.uptimeSeconds)],
            ["discovery", discovery],
            ["devices", devices],
        ] + deviceSetRows + [
            ["queued", queue],
        ] + relayRows + warningRows
    }

    /// `device set`: its size, or that this device was removed from it; nothing when it is off.
    var deviceSetRows: [[String]] {
        guard let set = status.deviceSet else { return [] }
        guard !set.removed else {
            let by = set.removedBy.map { id in peers.first { $0.deviceID == id }.map { Output.visible($0.name) } ?? Output.shortID(id) }
            var text = "removed from its device set" + (by.map { " by \($0)" } ?? "")
            if let at = set.removedAt { text += " at \(Date(timeIntervalSince1970: at).formatted(.iso8601))" }
            return [["device set", text], ["", "pair it again by code (`meshctl pair`) to come back"]]
        }
        return [["device set", set.size == 1 ? "this device only" : "\(set.size) members (this device included)"]]
    }

    /// `relay` with the broker and the connection's state in words; nothing without a relay.
    var relayRows: [[String]] {
        guard let relay = status.relay else { return [] }
        var text = "\(relay.state): \(relay.url)"
        if let mqtt = relay.mqtt { text += " (\(mqtt))" }
        var rows = [["relay", text]]
        if let detail = relay.detail { rows.append(["", detail]) }
        if let wait = relay.retryInSeconds { rows.append(["", "next attempt in \(Output.duration(wait))"]) }
        return rows
    }

    /// `warnings` with one sentence per row, or `none since the daemon started`.
    var warningRows: [[String]] {
        let sentences = warnings
        guard let first = sentences.first else { return [["warnings", "none since the daemon started"]] }
        return [["warnings", first + " (since the daemon started)"]] + sentences.dropFirst().map { ["", $0] }
    }

    /// Discovery state from the `discovery.*` counters.
    var discovery: String {
        let counters = status.counters
        guard counters["discovery.enabled"] != 0 else { return "off: static peers only" }
        if counters["discovery.mdns_available"] == 1 {
            let published = counters["discovery.mdns_published"] == 1 ? "published" : "not published yet"
            let found = counters["discovery.paired_found"] ?? 0
            return "mDNS via Avahi, \(published); \(found) paired \(found == 1 ? "device" : "devices") found on the network"
        }
        if (counters["discovery.mdns_outages_total"] ?? 0) > 0 {
            return "Avahi not available: discovery off, static peers only"
        }
        if Self.isLoopback(status.listen) {
            return "mDNS off (listening on loopback): static peers only"
        }
        return "mDNS not in use (off in the config, or Avahi still starting): static peers only"
    }

    /// Paired and active devices, naming the active ones.
    var devices: String {
        guard !peers.isEmpty else { return "none paired; pair one with `meshctl pair`" }
        let active = peers.filter { $0.channel == .active }
        let names = active.map { Output.visible($0.name) }.joined(separator: ", ")
        return "\(peers.count) paired, \(active.count) active" + (active.isEmpty ? "" : " (\(names))")
    }

    /// Queued reliable items, per peer.
    var queue: String {
        guard let queued else { return "unknown (the daemon did not list its queue)" }
        guard !queued.isEmpty else { return "nothing waiting" }
        var perPeer: [String: Int] = [:]
        for item in queued { perPeer[item.peer, default: 0] += 1 }
        let names = Dictionary(peers.map { ($0.deviceID, $0.name) }, uniquingKeysWith: { first, _ in first })
        let parts = perPeer.sorted { $0.key < $1.key }.map { peer, count in
            "\(count) for \(Output.visible(names[peer] ?? Output.shortID(peer)))"
        }
        return "\(queued.count) \(queued.count == 1 ? "item" : "items") waiting (\(parts.joined(separator: ", ")))"
    }

    /// Sentences for the counters that mean something went wrong since the daemon started.
    var warnings: [String] {
        Self.warningCounters.compactMap { name, sentence in
            guard let value = status.counters[name], value > 0 else { return nil }
            return "\(value) \(sentence)"
        }
    }

    /// Counter → what its count means, in the order they are shown. Names are the daemon's
    /// documented counters; counters that only measure traffic are not warnings.
    static let warningCounters: [(String, String)] = [
        ("discovery.mdns_outages_total", "time(s) Avahi became unavailable"),
        ("handshakes.failed", "handshake(s) failed"),
        ("handshakes.refused.unknown_key", "handshake(s) from unpaired devices refused"),
        ("handshakes.refused.replay", "replayed handshake(s) refused"),
        ("connections.rate_limited", "connection(s) refused by the rate limit"),
        ("connections.over_cap", "connection(s) refused: too many unauthenticated"),
        ("connections.bad_preamble", "connection(s) that did not speak SessionMesh"),
        ("connections.timed_out", "connection(s) timed out before authenticating"),
        ("datagrams.rejected", "datagram(s) failed authentication"),
        ("stream.frames_rejected", "stream frame(s) failed authentication"),
        ("pairing.attempts_failed", "pairing attempt(s) failed"),
        ("pairing.attempts_refused", "pairing attempt(s) refused"),
        ("messages.inbound_dropped", "inbound message(s) dropped"),
        ("delivery.malformed", "malformed delivery message(s) from peers"),
        ("delivery.store_errors", "store error(s) (check the disk)"),
        ("delivery.reliable.refused", "reliable batch(es) refused by a peer's full inbox"),
        ("delivery.outbox.uid_share_refused", "send(s) refused: a local uid's share of the outbox was full"),
        ("delivery.slots.uid_share_refused", "snapshot(s) refused: a local uid's share of the outbound slots was full"),
        ("delivery.sessions.uid_share_refused", "session announce(s)/close(s) refused: a local uid's share of the session rows was full"),
        ("delivery.anchors.uid_share_refused", "anchor set(s) refused: a local uid's share of the timer anchors was full"),
        ("delivery.inbox.refused", "reliable batch(es) refused: this inbox was full"),
        ("pending.dropped", "pending realtime item(s) dropped"),
        ("delivery.inbox.expired", "inbox item(s) expired: no app of their feature attached in time"),
        ("delivery.snapshots.refused", "snapshot(s) from peers refused: over the inbound_max_slots limits"),
        ("delivery.sessions.refused", "session row(s) from peers refused: over the inbound_max_sessions limits"),
        ("delivery.sessions.not_owned", "session row(s) from peers refused: the row is another device's"),
        ("delivery.sessions.handovers_refused", "session hand-over(s) refused: not from a member of the device set, not valid, or over a limit"),
        ("delivery.anchors.over_limit", "timer anchor(s) from peers refused: over the inbound_max_anchors limits"),
    ]

    /// Whether `HOST:PORT` names a loopback host.
    static func isLoopback(_ hostPort: String) -> Bool {
        let host = hostPort.hasPrefix("[") ? String(hostPort.dropFirst().prefix { $0 != "]" }) : String(hostPort.prefix { $0 != ":" })
        return host == "::1" || host == "localhost" || host.hasPrefix("127.")
    }
}
