import MeshLocalAPI

/// The data operations (issue 5) the daemon serves: codes 0x0100–0x0FFF (docs/LOCAL-API.md §
/// data operations). Events use 0x0180–0x0186.
enum LocalAPIDataOperation {
    static let attach = LocalAPIOperation(rawValue: 0x0100)
    static let send = LocalAPIOperation(rawValue: 0x0101)
    static let snapshotPublish = LocalAPIOperation(rawValue: 0x0102)
    static let snapshotRequest = LocalAPIOperation(rawValue: 0x0103)
    static let snapshotLatest = LocalAPIOperation(rawValue: 0x0104)
    static let anchorSet = LocalAPIOperation(rawValue: 0x0105)
    static let sessionAnnounce = LocalAPIOperation(rawValue: 0x0106)
    static let sessionClose = LocalAPIOperation(rawValue: 0x0107)
    static let sessions = LocalAPIOperation(rawValue: 0x0108)
    static let inboxAck = LocalAPIOperation(rawValue: 0x0109)
    static let queue = LocalAPIOperation(rawValue: 0x010A)
    static let queueCancel = LocalAPIOperation(rawValue: 0x010B)
    static let watermarkSet = LocalAPIOperation(rawValue: 0x010C)

    static let envelopeEvent = LocalAPIOperation(rawValue: 0x0180)
    static let snapshotEvent = LocalAPIOperation(rawValue: 0x0181)
    static let snapshotRequestEvent = LocalAPIOperation(rawValue: 0x0182)
    static let reachabilityEvent = LocalAPIOperation(rawValue: 0x0183)
    static let anchorEvent = LocalAPIOperation(rawValue: 0x0184)
    static let sessionEvent = LocalAPIOperation(rawValue: 0x0185)
    static let watermarkEvent = LocalAPIOperation(rawValue: 0x0186)

    /// Every request code, with its documented name (reported by `hello`).
    static let all: [(LocalAPIOperation, String)] = [
        (attach, "attach"), (send, "send"), (snapshotPublish, "snapshot.publish"),
        (snapshotRequest, "snapshot.request"), (snapshotLatest, "snapshot.latest"), (anchorSet, "anchor.set"),
        (sessionAnnounce, "session.announce"), (sessionClose, "session.close"), (sessions, "sessions"),
        (inboxAck, "inbox.ack"), (queue, "queue"), (queueCancel, "queue.cancel"), (watermarkSet, "watermark.set"),
    ]

    /// Operations whose request body is binary.
    static let binaryRequests: Set<LocalAPIOperation> = [send, snapshotPublish]

    /// Operations whose reply body is binary.
    static let binaryReplies: Set<LocalAPIOperation> = [snapshotLatest]

    static func isData(_ operation: LocalAPIOperation) -> Bool { all.contains { $0.0 == operation } }

    static func name(_ operation: LocalAPIOperation) -> String {
        all.first { $0.0 == operation }?.1 ?? operation.name
    }
}
