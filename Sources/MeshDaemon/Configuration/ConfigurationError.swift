/// A configuration problem that stops start-up: where it is (file and line, or the flag) and
/// what is wrong with which key.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The config file, or nil for a command-line flag or the environment.
    public var file: String?
    /// 1-based line in `file`, when the problem is on a line.
    public var line: Int?
    /// The key (`socket_mode`) or flag (`--listen`) at fault, if any.
    public var key: String?
    /// What is wrong and what to do.
    public var message: String

    /// Creates an error.
    public init(file: String? = nil, line: Int? = nil, key: String? = nil, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    /// `FILE:LINE: key 'KEY': MESSAGE`, with the parts that are known.
    public var description: String {
        var location = ""
        if let file { location = file + (line.map { ":\($0)" } ?? "") + ": " }
        else if let line { location = "line \(line): " }
        let subject = key.map { $0.hasPrefix("-") ? "\($0): " : "key '\($0)': " } ?? ""
        return location + subject + message
    }
}
