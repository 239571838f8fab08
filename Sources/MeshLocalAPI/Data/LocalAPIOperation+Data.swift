// The data operations and events (docs/LOCAL-API.md §9, data operations).

extension LocalAPIOperation {
    /// Subscribe this connection to features: `MeshAttachRequest` → `MeshAttachReply`; events follow.
    public static let attach = LocalAPIOperation(rawValue: 0x0100)
    /// Send an envelope (binary `MeshSendRequest`) → `MeshSendReply`.
    public static let send = LocalAPIOperation(rawValue: 0x0101)
    /// Publish into the outbound latest-state slot (binary `MeshSnapshotPublishRequest`) → `MeshSnapshotPublishReply`.
    public static let snapshotPublish = LocalAPIOperation(rawValue: 0x0102)
    /// Ask a peer for a snapshot: `MeshSnapshotAskRequest` → `EmptyBody`; the snapshot comes as an event.
    public static let snapshotRequest = LocalAPIOperation(rawValue: 0x0103)
    /// Read the inbound latest-state slot: `MeshSnapshotLatestRequest` → binary `MeshSnapshotLatestReply`.
    public static let snapshotLatest = LocalAPIOperation(rawValue: 0x0104)
    /// Set a session's timer anchor: `MeshAnchorSetRequest` → `MeshAnchorSetReply`.
    public static let anchorSet = LocalAPIOperation(rawValue: 0x0105)
    /// Announce or update a session: `MeshSessionAnnounceRequest` → `EmptyBody`.
    public static let sessionAnnounce = LocalAPIOperation(rawValue: 0x0106)
    /// Close a session (awaitable): `MeshSessionCloseRequest` → `MeshSessionCloseReply`.
    public static let sessionClose = LocalAPIOperation(rawValue: 0x0107)
    /// The replicated session directory: `MeshSessionsRequest` → `MeshSessionsReply`.
    public static let sessions = LocalAPIOperation(rawValue: 0x0108)
    /// Acknowledge inbox items: `MeshInboxAckRequest` → `MeshInboxAckReply`.
    public static let inboxAck = LocalAPIOperation(rawValue: 0x0109)
    /// Outstanding outbound transfers: `EmptyBody` → `MeshQueueReply`.
    public static let queue = LocalAPIOperation(rawValue: 0x010A)
    /// Cancel one outstanding transfer: `MeshQueueCancelRequest` → `EmptyBody`.
    public static let queueCancel = LocalAPIOperation(rawValue: 0x010B)
    /// Report what this app processed of a peer's events: `MeshWatermarkBody` → `EmptyBody`.
    public static let watermarkSet = LocalAPIOperation(rawValue: 0x010C)
    /// The received items waiting for an app: `EmptyBody` → `MeshInboxReply` (drop one with `inbox.ack`).
    public static let inbox = LocalAPIOperation(rawValue: 0x010D)

    /// Event: an envelope arrived (binary `MeshEnvelopeEvent`).
    public static let envelopeEvent = LocalAPIOperation(rawValue: 0x0180)
    /// Event: a snapshot arrived (binary `MeshSnapshotEvent`).
    public static let snapshotEvent = LocalAPIOperation(rawValue: 0x0181)
    /// Event: a peer asks for a snapshot (binary `MeshSnapshotRequestEvent`).
    public static let snapshotRequestEvent = LocalAPIOperation(rawValue: 0x0182)
    /// Event: a peer's (or a feature's) reachability changed (`MeshReachabilityEvent`).
    public static let reachabilityEvent = LocalAPIOperation(rawValue: 0x0183)
    /// Event: a peer set a timer anchor, already in this device's clock (`MeshAnchorEvent`).
    public static let anchorEvent = LocalAPIOperation(rawValue: 0x0184)
    /// Event: the session directory changed (`MeshSessionEvent`).
    public static let sessionEvent = LocalAPIOperation(rawValue: 0x0185)
    /// Event: a peer's app processed our events up to a sequence (`MeshWatermarkBody`).
    public static let watermarkEvent = LocalAPIOperation(rawValue: 0x0186)

    /// The data requests, in documentation order.
    public static let dataOperations: [LocalAPIOperation] = [
        .attach, .send, .snapshotPublish, .snapshotRequest, .snapshotLatest, .anchorSet, .sessionAnnounce,
        .sessionClose, .sessions, .inboxAck, .queue, .queueCancel, .watermarkSet, .inbox,
    ]

    /// The data events, in documentation order (plus `eventsDropped`, a control-range code).
    public static let dataEvents: [LocalAPIOperation] = [
        .envelopeEvent, .snapshotEvent, .snapshotRequestEvent, .reachabilityEvent, .anchorEvent,
        .sessionEvent, .watermarkEvent,
    ]

    /// Whether requests of this operation carry a binary body (`send`, `snapshot.publish`).
    public var takesBinaryBody: Bool { self == .send || self == .snapshotPublish }

    /// Whether replies of this operation carry a binary body (`snapshot.latest`).
    public var repliesWithBinaryBody: Bool { self == .snapshotLatest }

    /// The documented name of a data operation or event, or nil for any other code.
    public var dataName: String? {
        switch rawValue {
        case 0x0100: "attach"
        case 0x0101: "send"
        case 0x0102: "snapshot.publish"
        case 0x0103: "snapshot.request"
        case 0x0104: "snapshot.latest"
        case 0x0105: "anchor.set"
        case 0x0106: "session.announce"
        case 0x0107: "session.close"
        case 0x0108: "sessions"
        case 0x0109: "inbox.ack"
        case 0x010A: "queue"
        case 0x010B: "queue.cancel"
        case 0x010C: "watermark.set"
        case 0x010D: "inbox"
        case 0x0180: "envelope"
        case 0x0181: "snapshot"
        case 0x0182: "snapshot.request"
        case 0x0183: "reachability"
        case 0x0184: "anchor"
        case 0x0185: "session"
        case 0x0186: "watermark"
        default: nil
        }
    }
}
