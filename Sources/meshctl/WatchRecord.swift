import Foundation
import MeshLocalAPI
import SessionMesh
import SessionMeshClient

/// One event as `meshctl watch` prints it: a JSON line (`--json`) or an aligned text line.
///
/// JSON keys (absent when they do not apply): `type` (envelope, snapshot, snapshot-request,
/// reachability, anchor, session, watermark, events-dropped, undecodable), `time` (when printed,
/// seconds since 1970), `from`, `feature`, `sessionID`, `eventID`, `sequence`, `sourcePeerID`,
/// `payloadType`, `mode`, `inboxID`, `redelivery`, `payload` (UTF-8 text when printable) or
/// `payloadBase64`, `revision`, `peer`, `reachable`, `reason`, `change`, `owner`, `status`,
/// `anchor`, `elapsedSeconds`, `dropped`, `detail`.
struct WatchRecord: Encodable {
    var type: String
    var time: Double
    var from: String?
    var feature: String?
    var sessionID: UUID?
    var eventID: UUID?
    var sequence: UInt64?
    var sourcePeerID: String?
    var payloadType: String?
    var mode: String?
    var inboxID: UInt64?
    var redelivery: Bool?
    var payload: String?
    var payloadBase64: String?
    var revision: UInt64?
    var peer: String?
    var reachable: Bool?
    var reason: String?
    var change: String?
    var owner: String?
    var status: String?
    var anchor: MeshTimerAnchorBody?
    var elapsedSeconds: Double?
    var dropped: UInt64?
    var detail: String?

    init(type: String, time: Date) {
        self.type = type
        self.time = time.timeIntervalSince1970
    }

    /// The record of `event`, printed at `now`.
    init(_ event: MeshClientEvent, now: Date) {
        switch event {
        case .envelope(let e):
            self.init(type: "envelope", time: now)
            from = e.from
            metadata(e.envelope.metadata)
            mode = Self.modeName(e.mode)
            inboxID = e.inboxID
            redelivery = e.isRedelivery
            setPayload(e.envelope.payload)
        case .snapshot(let e):
            self.init(type: "snapshot", time: now)
            from = e.from
            metadata(e.snapshot.metadata)
            revision = e.snapshot.revision
            setPayload(e.snapshot.state)
        case .snapshotRequest(let e):
            self.init(type: "snapshot-request", time: now)
            from = e.from
            feature = e.request.featureID
            sessionID = e.request.sessionID
            sourcePeerID = e.request.requestingPeerID
        case .reachability(let e):
            self.init(type: "reachability", time: now)
            peer = e.peer
            feature = e.featureID
            reachable = e.reachable
            reason = e.reason.rawValue
        case .anchor(let e):
            self.init(type: "anchor", time: now)
            from = e.from
            feature = e.featureID
            sessionID = e.sessionID
            revision = e.revision
            anchor = e.anchor
            elapsedSeconds = e.anchor.anchor.elapsed(at: now)
        case .session(let e):
            self.init(type: "session", time: now)
            from = e.sourcePeer
            feature = e.featureID
            sessionID = e.sessionID
            owner = e.owner
            status = e.status
            revision = e.revision
            change = e.change.rawValue
        case .watermark(let e):
            self.init(type: "watermark", time: now)
            peer = e.peer
            feature = e.featureID
            sessionID = e.sessionID
            sequence = e.sequence
        case .eventsDropped(let count):
            self.init(type: "events-dropped", time: now)
            dropped = count
        case .undecodable(let operation, let reason):
            self.init(type: "undecodable", time: now)
            detail = "\(operation): \(reason)"
        }
    }

    private mutating func metadata(_ m: SessionSyncMetadata) {
        feature = m.featureID
        sessionID = m.sessionID
        eventID = m.eventID
        sequence = m.sequence
        sourcePeerID = m.sourcePeerID
        payloadType = m.payloadType
    }

    private mutating func setPayload(_ data: Data) {
        if let text = Self.printable(data) { payload = text } else { payloadBase64 = data.base64EncodedString() }
    }

    /// The bytes as text when they are UTF-8 without control characters (tab allowed).
    static func printable(_ data: Data) -> String? {
        guard let text = String(data: data, encoding: .utf8) else { return nil }
        let controls = text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t") || (0x7F..<0xA0).contains($0.value) }
        return controls ? nil : text
    }

    static func modeName(_ mode: SessionDeliveryMode) -> String {
        switch mode {
        case .realtimeBestEffort: "realtime"
        case .reliableEventually: "reliable"
        case .latestSnapshot: "snapshot"
        case .snapshotRequest: "request"
        case .acknowledgement: "ack"
        }
    }

    /// Columns of the text line: time, type, who, then the details.
    var columns: [String] {
        let clock = Self.clock(time)
        let who = Output.shortID(from ?? peer ?? "-")
        var details: [String] = []
        switch type {
        case "envelope":
            details = [mode ?? "", "seq \(sequence ?? 0)", inboxID.map { $0 == 0 ? "" : "inbox \($0)" } ?? "",
                       redelivery == true ? "REDELIVERY" : "", shownPayload]
        case "snapshot":
            details = ["rev \(revision ?? 0)", sessionShort, shownPayload]
        case "snapshot-request":
            details = [sessionShort, "asked by \(sourcePeerID ?? "-")"]
        case "reachability":
            // The channel itself (no feature) is active or down; an app of a feature is reachable
            // or unreachable: one word per meaning, as in docs/CLI.md.
            details = feature.map { [$0, reachable == true ? "reachable" : "unreachable", reason ?? ""] }
                ?? ["(channel)", reachable == true ? "active" : "down", reason ?? ""]
        case "anchor":
            details = ["rev \(revision ?? 0)", sessionShort, anchor?.isPaused == true ? "paused" : "running",
                       String(format: "elapsed %.3f s", elapsedSeconds ?? 0)]
        case "session":
            details = [change ?? "", sessionShort, status ?? "", "owner \(owner ?? "-")"]
        case "watermark":
            details = [sessionShort, "processed up to seq \(sequence ?? 0)"]
        case "events-dropped":
            details = ["\(dropped ?? 0) events shed (read faster)"]
        default:
            details = [detail ?? ""]
        }
        return [clock, type, who] + [details.filter { !$0.isEmpty }.joined(separator: "  ")]
    }

    private var sessionShort: String { sessionID.map { "session " + $0.uuidString.prefix(8) } ?? "" }

    private var shownPayload: String {
        if let payload { return payload }
        return "base64:" + (payloadBase64 ?? "")
    }

    private static func clock(_ seconds: Double) -> String {
        var time = time_t(seconds.rounded(.down))
        var parts = tm()
        localtime_r(&time, &parts)
        let millis = Int((seconds - seconds.rounded(.down)) * 1000)
        return String(format: "%02d:%02d:%02d.%03d", parts.tm_hour, parts.tm_min, parts.tm_sec, millis)
    }
}
