/// A failure of the durable store, naming the operation, the database file and what to do.
///
/// Compare ``code`` against the static members of ``StoreError/Code`` (`.full`, `.corrupt`, …);
/// new codes may be added, so a `switch` needs a default. When ``code`` is `.full`, ``limit``
/// says which configured limit (or the disk) was reached; nothing already stored was changed.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is. Extensible: compare with `==`, do not switch exhaustively.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case full, corrupt, incompatible, cannotOpen, busy, io, invalidArgument, closed, internalError
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A configured limit or the disk is full; the write was refused and nothing was lost.
        public static let full = Code(.full)
        /// The database file is damaged or is not a SQLite database. It was left untouched.
        public static let corrupt = Code(.corrupt)
        /// The file is a database of another program or of a newer SessionMesh schema.
        public static let incompatible = Code(.incompatible)
        /// The file could not be opened or created (path, permissions, read-only file system).
        public static let cannotOpen = Code(.cannotOpen)
        /// Another process holds a lock on the database longer than the busy timeout.
        public static let busy = Code(.busy)
        /// The operating system reported an I/O error while reading or writing the file.
        public static let io = Code(.io)
        /// The caller passed a value the store cannot hold (for example a revision above Int64.max).
        public static let invalidArgument = Code(.invalidArgument)
        /// The store was closed before this call.
        public static let closed = Code(.closed)
        /// SQLite reported something this wrapper does not expect: a bug, please report it.
        public static let internalError = Code(.internalError)

        /// The code's name, e.g. `full`.
        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public let code: Code
    /// The store operation that failed, e.g. `enqueue outbox item`.
    public let operation: String
    /// The database file.
    public let path: String
    /// For `.full`: the limit that was reached. `nil` for other codes.
    public let limit: StoreLimit?
    /// Details from SQLite or the store (never payload bytes).
    public let detail: String

    /// Creates an error; the store builds these, callers normally only read them.
    public init(code: Code, operation: String, path: String, limit: StoreLimit? = nil, detail: String) {
        self.code = code
        self.operation = operation
        self.path = path
        self.limit = limit
        self.detail = detail
    }

    /// One line a person can act on: what failed, where, why and what to do.
    public var description: String {
        var text = "store \(code): \(operation) failed on \(path): \(detail)"
        if let limit { text += " (limit: \(limit))" }
        switch code {
        case .full where limit?.isOutboundSlotShare == true:
            // Slots leave with their sessions, not with deliveries.
            text += "; close sessions this uid no longer uses, or raise the limit (`\(limit?.configKey ?? "")` in meshd.toml)"
        case .full where limit?.isSessionShare == true:
            // This device's rows stay (a closed session keeps its row): waiting frees nothing.
            text += "; other uids can still write theirs; raise the limit (`\(limit?.configKey ?? "")` in meshd.toml)"
        case .full:
            text += "; wait for queued items to be delivered, cancel some (`meshctl queue cancel`), or "
            if let key = limit?.configKey { text += "raise the limit (`\(key)` in meshd.toml)" }
            else { text += "free disk space" }
        case .corrupt: text += "; the file was not modified: move it aside (or restore a backup) and restart"
        case .incompatible: text += "; use the SessionMesh version that wrote this file, or move it aside"
        case .busy: text += "; is another meshd using the same state directory?"
        default: break
        }
        return text
    }
}
