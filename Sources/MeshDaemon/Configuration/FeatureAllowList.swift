/// Which local users may use which features over the local API (config key `feature_allow`).
///
/// Entries are `UID:FEATURE`; `FEATURE` may be `*` (every feature). With a list configured, a
/// client whose uid has no matching entry gets `feature-not-allowed` for data operations on
/// that feature. uid 0 (root, who can read the store anyway) is always allowed. Without a list
/// every client that can open the socket may use every feature.
public struct FeatureAllowList: Sendable, Equatable {
    /// Allowed features per uid (`*` = all).
    public var entries: [UInt32: Set<String>]

    /// Creates a list.
    public init(entries: [UInt32: Set<String>]) { self.entries = entries }

    /// Parses `UID:FEATURE` strings; throws a message naming the bad entry.
    public init(parsing items: [String]) throws(ConfigurationError) {
        var entries: [UInt32: Set<String>] = [:]
        for item in items {
            let parts = item.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2, let uid = UInt32(parts[0]), !parts[1].isEmpty, parts[1].utf8.count <= 255 else {
                throw ConfigurationError(message: "'\(item)' is not UID:FEATURE (e.g. \"1000:demo\" or \"1000:*\")")
            }
            entries[uid, default: []].insert(parts[1])
        }
        self.entries = entries
    }

    /// Whether `uid` (nil: unknown peer credentials) may use at least one feature (what lets a
    /// user without the control role `ping`).
    public func allowsSomeFeature(uid: UInt32?) -> Bool {
        guard let uid else { return false }
        return uid == 0 || !(entries[uid]?.isEmpty ?? true)
    }

    /// Whether `uid` (nil: unknown peer credentials) may use `feature`.
    public func allows(uid: UInt32?, feature: String) -> Bool {
        guard let uid else { return false }
        if uid == 0 { return true }
        guard let features = entries[uid] else { return false }
        return features.contains("*") || features.contains(feature)
    }
}
