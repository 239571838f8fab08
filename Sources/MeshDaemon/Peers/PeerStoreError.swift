/// Why the paired-device store could not be read or written. Names the file and what to do.
public struct PeerStoreError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of failure this is.
    public enum Code: String, Sendable, Equatable {
        /// The file exists but is not a valid store (bad JSON, bad key, wrong version).
        case corrupt
        /// The file is readable by group or others.
        case insecurePermissions
        /// Reading, writing, syncing or renaming failed.
        case io
    }

    /// The kind of failure.
    public var code: Code
    /// The store file.
    public var path: String
    /// What exactly failed (never contains a key).
    public var detail: String

    /// Creates an error.
    public init(code: Code, path: String, detail: String) {
        self.code = code
        self.path = path
        self.detail = detail
    }

    /// A sentence a person can act on.
    public var description: String {
        switch code {
        case .corrupt:
            return "the paired-device store \(path) is corrupt (\(detail)); it was left untouched. "
                + "Restore it from a backup, or move it aside to start with no paired devices and pair again."
        case .insecurePermissions:
            return "the paired-device store \(path) holds pair keys but \(detail); run `chmod 600 \(path)`"
        case .io:
            return "could not access the paired-device store \(path): \(detail)"
        }
    }
}
