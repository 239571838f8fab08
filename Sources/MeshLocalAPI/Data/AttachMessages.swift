import Foundation
import MeshCore

// JSON bodies of `attach` (0x0100).

/// `attach` request: subscribe this connection to the events of `features`.
///
/// `{"features": ["demo"], "sessionID": "UUID"?, "app": "name"?}`. A connection may attach
/// several times; features add up. Pending inbox items of those features follow the reply.
public struct MeshAttachRequest: Codable, Sendable, Equatable {
    /// Most features one attach may name.
    public static let maximumFeatures = 64

    /// Feature ids (1–255 UTF-8 bytes each, 1 to `maximumFeatures` of them).
    public var features: [String]
    /// Narrow session-scoped events to one session, when given.
    public var sessionID: UUID?
    /// A free-form app name: the daemon logs it at info level with the attachment (`app attached`).
    public var app: String?

    /// Creates a request.
    public init(features: [String], sessionID: UUID? = nil, app: String? = nil) {
        self.features = features
        self.sessionID = sessionID
        self.app = app
    }

    /// Throws `invalid-argument` when `features` is empty or has more than `maximumFeatures`
    /// entries, or a feature id is empty or over 255 bytes.
    public func validate() throws(LocalAPIErrorBody) {
        guard !features.isEmpty else {
            throw LocalAPIDataError.invalidArgument(.attach, "'features' is empty; name at least one feature")
        }
        guard features.count <= Self.maximumFeatures else {
            throw LocalAPIDataError.invalidArgument(.attach, "at most \(Self.maximumFeatures) features per attach, got \(features.count)")
        }
        for feature in features {
            try LocalAPIFeatureID.validate(feature, operation: .attach)
        }
    }
}

/// `attach` reply.
public struct MeshAttachReply: Codable, Sendable, Equatable {
    /// Identifies this attachment in the daemon's log and status.
    public var attachmentID: UInt64
    /// This daemon's full device ID (the `from` of events this device's apps send elsewhere).
    public var localDeviceID: String
    /// Every paired device and whether it is reachable now.
    public var peers: [MeshAttachedPeer]

    /// Creates a reply.
    public init(attachmentID: UInt64, localDeviceID: String, peers: [MeshAttachedPeer]) {
        self.attachmentID = attachmentID
        self.localDeviceID = localDeviceID
        self.peers = peers
    }
}

/// One paired device in an `attach` reply.
public struct MeshAttachedPeer: Codable, Sendable, Equatable, Hashable {
    /// Full device ID.
    public var deviceID: String
    /// The name the device gave while pairing.
    public var name: String
    /// Whether its reachability lease is live now.
    public var reachable: Bool

    /// Creates an entry.
    public init(deviceID: String, name: String, reachable: Bool) {
        self.deviceID = deviceID
        self.name = name
        self.reachable = reachable
    }
}

/// Rules for feature ids on the local API.
public enum LocalAPIFeatureID {
    /// Longest feature id in UTF-8 bytes (it must fit a binary `str`).
    public static let maximumBytes = FeatureIDLimit.maximumBytes

    /// Throws `invalid-argument` when `feature` is empty or longer than `maximumBytes`.
    public static func validate(_ feature: String, operation: LocalAPIOperation) throws(LocalAPIErrorBody) {
        guard !feature.isEmpty, feature.utf8.count <= maximumBytes else {
            throw LocalAPIDataError.invalidArgument(operation, "feature id must be 1–\(maximumBytes) UTF-8 bytes, got \(feature.utf8.count)")
        }
    }
}
