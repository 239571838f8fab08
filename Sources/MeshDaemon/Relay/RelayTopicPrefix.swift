/// The fixed start of every relay topic (`relay_topic_prefix`, default `sessionmesh/`), checked
/// so that every topic built on it is a valid MQTT topic name the broker's ACL can confine.
///
/// Rules (the same as `relay_topic_prefix`'s in docs/CONFIG.md): 1–64 printable ASCII
/// characters (no space, no control character), ending with `/`, with no `+` or `#` (MQTT
/// wildcards), not starting with `$` (the broker's own `$SYS/…` topics).
public struct RelayTopicPrefix: Sendable, Hashable, CustomStringConvertible {
    /// The prefix of a relay that names none.
    public static let standard = RelayTopicPrefix(unchecked: "sessionmesh/")
    /// Longest prefix accepted, in characters.
    public static let maximumLength = 64

    /// The prefix as written.
    public let text: String

    /// Checks `text`; throws an error that says which rule it breaks.
    public init(_ text: String) throws(RelayTopicPrefixError) {
        let bytes = text.utf8.count
        guard bytes > 0 else { throw RelayTopicPrefixError("is empty; use e.g. \"sessionmesh/\"") }
        guard bytes <= Self.maximumLength else {
            throw RelayTopicPrefixError("is \(bytes) bytes long; at most \(Self.maximumLength) are allowed")
        }
        guard text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw RelayTopicPrefixError("may hold only printable ASCII characters, without spaces")
        }
        guard !text.contains("+"), !text.contains("#") else {
            throw RelayTopicPrefixError("contains an MQTT wildcard (+ or #)")
        }
        guard !text.hasPrefix("$") else {
            throw RelayTopicPrefixError("starts with $, which MQTT reserves for the broker's own topics")
        }
        guard text.hasSuffix("/") else {
            throw RelayTopicPrefixError("does not end with /; write \"\(text)/\"")
        }
        self.text = text
    }

    private init(unchecked text: String) { self.text = text }

    /// The prefix as written.
    public var description: String { text }
}

/// A `relay_topic_prefix` that breaks a rule of ``RelayTopicPrefix``.
public struct RelayTopicPrefixError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which rule, in words.
    public let reason: String

    init(_ reason: String) { self.reason = reason }

    /// "relay topic prefix …reason".
    public var description: String { "relay topic prefix \(reason)" }
}
