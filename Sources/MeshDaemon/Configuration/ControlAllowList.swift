/// Who besides root and the daemon's own user may take the control role on the local API
/// (config key `control_allow`): pair, cancel codes and unpair.
///
/// Entries are a numeric uid (`"1000"`) or a group (`"@sessionmesh-admin"`, or `"@1001"` by
/// gid). A group matches a client whose uid has it as its primary or a supplementary group, or
/// whose connection's effective gid is it. Group names are resolved when a request is checked,
/// so a group created (or a member added) after start counts without a restart.
public struct ControlAllowList: Sendable, Equatable {
    /// A group named in the list.
    public enum Group: Sendable, Equatable, Hashable {
        /// `@NAME`.
        case name(String)
        /// `@GID`.
        case gid(UInt32)
    }

    /// Allowed uids.
    public var uids: Set<UInt32>
    /// Allowed groups.
    public var groups: [Group]

    /// Creates a list.
    public init(uids: Set<UInt32> = [], groups: [Group] = []) {
        self.uids = uids
        self.groups = groups
    }

    /// Parses `"UID"` and `"@GROUP"` strings; throws a message naming the bad entry.
    public init(parsing items: [String]) throws(ConfigurationError) {
        self.init()
        for item in items {
            if item.hasPrefix("@") {
                let group = String(item.dropFirst())
                if let gid = UInt32(group) {
                    groups.append(.gid(gid))
                } else if Self.isGroupName(group) {
                    groups.append(.name(group))
                } else {
                    throw ConfigurationError(message: "'\(item)' is not @GROUP; a group name is 1 to 32 letters, digits, '.', '_' or '-' (e.g. \"@sessionmesh-admin\")")
                }
            } else if let uid = UInt32(item) {
                uids.insert(uid)
            } else {
                throw ConfigurationError(message: "'\(item)' is not a uid or @GROUP (e.g. \"1000\" or \"@sessionmesh-admin\")")
            }
        }
    }

    /// The names the list uses (for a start-up check that they exist).
    public var groupNames: [String] {
        groups.compactMap { if case .name(let name) = $0 { return name } else { return nil } }
    }

    private static func isGroupName(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 32, text.first != "-" else { return false }
        return text.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}
