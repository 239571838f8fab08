import Foundation

/// One `attach` of a local client.
struct DeliveryAttachment: Sendable {
    var features: Set<String>
    var sessionID: UUID?
    var app: String?
    var sink: any DeliveryEventSink
}

/// The attached local clients: their attachments, which sinks get a feature's events, and the
/// set of features this device last announced to its peers (presence).
///
/// The router keeps one and does the I/O: `attach`/`detach` say whether the presence to
/// announce changed and whether a sink has no attachment left.
struct AttachmentTable: Sendable {
    private(set) var attachments: [UInt64: DeliveryAttachment] = [:] {
        didSet { sinksByFeature.removeAll() }
    }
    /// `sinks(for:)` of features that have sinks, until `attachments` changes (it runs for every
    /// received realtime item).
    private var sinksByFeature: [String: [any DeliveryEventSink]] = [:]
    private var nextID: UInt64 = 1
    /// The features with an attached app, as last announced to the peers (sorted).
    private(set) var announcedFeatures: [String] = []

    /// What an attach or detach changed.
    struct Change {
        /// The attachment's id.
        var id: UInt64
        /// The features with an attached app, when they differ from the ones announced last
        /// (now recorded as announced): to send to every active peer.
        var presence: [String]?
        /// A detach removed the last attachment of this sink.
        var sinkGone: ObjectIdentifier?
    }

    var count: Int { attachments.count }

    /// Adds an attachment of `sink` for `features`.
    mutating func attach(features: Set<String>, sessionID: UUID?, app: String?, sink: any DeliveryEventSink) -> Change {
        let id = nextID
        nextID &+= 1
        attachments[id] = DeliveryAttachment(features: features, sessionID: sessionID, app: app, sink: sink)
        return Change(id: id, presence: presenceChange(), sinkGone: nil)
    }

    /// Removes attachment `id`; nil when there is none.
    mutating func detach(_ id: UInt64) -> Change? {
        guard let removed = attachments.removeValue(forKey: id) else { return nil }
        let key = ObjectIdentifier(removed.sink)
        return Change(id: id, presence: presenceChange(), sinkGone: isAttached(key) ? nil : key)
    }

    /// The attached features when they changed since the last announcement (recorded now).
    private mutating func presenceChange() -> [String]? {
        let features = Set(attachments.values.flatMap(\.features)).sorted()
        guard features != announcedFeatures else { return nil }
        announcedFeatures = features
        return features
    }

    /// Whether some attachment still uses the sink `key`.
    func isAttached(_ key: ObjectIdentifier) -> Bool {
        attachments.values.contains { ObjectIdentifier($0.sink) == key }
    }

    /// The sink `key` when some attachment uses it.
    func sink(_ key: ObjectIdentifier) -> (any DeliveryEventSink)? {
        attachments.values.first { ObjectIdentifier($0.sink) == key }?.sink
    }

    /// Every feature the attachments of sink `key` are for.
    func features(of key: ObjectIdentifier) -> Set<String> {
        Set(attachments.values.filter { ObjectIdentifier($0.sink) == key }.flatMap(\.features))
    }

    /// The sinks of attachments of `featureID`, each once (the targets of a feature's events).
    mutating func sinks(for featureID: String) -> [any DeliveryEventSink] {
        if let cached = sinksByFeature[featureID] { return cached }
        var seen = Set<ObjectIdentifier>()
        let sinks = inAttachOrder.filter { $0.features.contains(featureID) }.map(\.sink)
            .filter { seen.insert(ObjectIdentifier($0)).inserted }
        // Cached only when non-empty: bounded by the attached features, whatever peers send.
        if !sinks.isEmpty { sinksByFeature[featureID] = sinks }
        return sinks
    }

    /// Every attached sink, each once (the targets of an event for all apps).
    func allSinks() -> [any DeliveryEventSink] {
        var seen = Set<ObjectIdentifier>()
        return inAttachOrder.map(\.sink).filter { seen.insert(ObjectIdentifier($0)).inserted }
    }

    /// The attachments oldest first: the order sinks get an event in (the ids grow; the
    /// dictionary's own order follows the process's hash seed).
    private var inAttachOrder: [DeliveryAttachment] {
        attachments.sorted { $0.key < $1.key }.map(\.value)
    }
}
