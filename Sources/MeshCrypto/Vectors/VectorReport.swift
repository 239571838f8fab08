/// The outcome of running a test-vector file.
public struct VectorReport: Sendable, Equatable {
    /// Vectors whose every checked value matched.
    public var passed = 0
    /// Vectors with at least one mismatch or error.
    public var failed = 0
    /// Vectors for protocols this implementation does not support (not run).
    public var unsupported = 0
    /// One line per failed vector: which vector and what did not match.
    public var failures: [String] = []
    /// The distinct protocol names that were skipped.
    public var unsupportedProtocols: [String] = []

    /// An empty report.
    public init() {}

    /// True when nothing failed and at least one vector ran.
    public var isSuccess: Bool { failed == 0 && passed > 0 }
}
