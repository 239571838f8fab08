import Foundation

/// `meshctl send`'s default session: a random UUID per (device, feature), made on the first send
/// of a feature to a daemon and kept in `$XDG_STATE_HOME/sessionmesh/meshctl-sessions.json`
/// (default `~/.local/state/…`, mode 0600), so successive sends form one stream while no
/// other user, device or feature can name the session in advance. When the file cannot be read
/// or written, each send gets a fresh random session (and says so on stderr).
struct DefaultSessions {
    /// The file, or nil when neither `XDG_STATE_HOME` nor `HOME` is set.
    let path: String?

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            path = state + "/sessionmesh/meshctl-sessions.json"
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            path = home + "/.local/state/sessionmesh/meshctl-sessions.json"
        } else {
            path = nil
        }
    }

    /// At most this many (device, feature) entries are kept; past it the oldest are forgotten.
    static let maximumEntries = 1024

    /// The session of `feature` on the daemon `deviceID`: the kept one, else a new random one
    /// that is kept from now on.
    func session(deviceID: String, feature: String, random: () -> UUID = UUID.init) -> UUID {
        let key = deviceID + "\n" + feature
        var entries = read()
        if let text = entries.first(where: { $0.key == key })?.session, let known = UUID(uuidString: text) { return known }
        let fresh = random()
        entries.removeAll { $0.key == key }
        entries.append(Entry(key: key, session: fresh.uuidString))
        if entries.count > Self.maximumEntries { entries.removeFirst(entries.count - Self.maximumEntries) }
        if !write(entries) {
            FileHandle.standardError.write(Data("meshctl: could not keep the default session in \(path ?? "a state file") (set XDG_STATE_HOME or pass --session); this send uses a new random session\n".utf8))
        }
        return fresh
    }

    struct Entry: Codable, Equatable {
        var key: String
        var session: String
    }

    private func read() -> [Entry] {
        guard let path, let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20 else { return [] }
        return (try? JSONDecoder().decode([Entry].self, from: data)) ?? []
    }

    private func write(_ entries: [Entry]) -> Bool {
        guard let path, let data = try? JSONEncoder().encode(entries) else { return false }
        let folder = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            let temporary = path + ".tmp\(getpid())"
            guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
                return false
            }
            guard rename(temporary, path) == 0 else {
                unlink(temporary)
                return false
            }
            return true
        } catch {
            return false
        }
    }
}
