/// Reads the TOML subset `meshd.toml` uses (docs/CONFIG.md): `key = value` lines, `#` comments,
/// and values that are strings (`"basic"` with escapes, `'literal'`), integers (decimal,
/// `0o`/`0x`/`0b`, `_` separators), floats, booleans, and arrays of those (may span lines).
/// Tables (`[section]`) and dotted keys are not part of the subset and are refused.
///
/// The parser knows nothing of meshd's keys; `ConfigFile` checks them.
public struct ConfigFileParser: Sendable {
    /// A parsed value.
    public enum Value: Sendable, Equatable {
        /// A quoted string.
        case string(String)
        /// An integer (decimal, `0o`, `0x` or `0b`).
        case integer(Int64)
        /// A finite float.
        case float(Double)
        /// `true` or `false`.
        case boolean(Bool)
        /// `[ … ]`, possibly over several lines.
        case array([Value])

        /// The TOML type name, for error messages.
        public var typeName: String {
            switch self {
            case .string: return "a string"
            case .integer: return "an integer"
            case .float: return "a float"
            case .boolean: return "a boolean"
            case .array: return "an array"
            }
        }
    }

    /// One `key = value` line.
    public struct Entry: Sendable, Equatable {
        /// The key.
        public var key: String
        /// The value.
        public var value: Value
        /// 1-based line where the key is.
        public var line: Int
    }

    /// Name of the file, for error messages.
    public let fileName: String

    /// Creates a parser that names `fileName` in its errors.
    public init(fileName: String) { self.fileName = fileName }

    /// Parses `text` into entries in file order. Throws on the first syntax error or duplicate
    /// key, naming the line.
    public func parse(_ text: String) throws(ConfigurationError) -> [Entry] {
        var entries: [Entry] = []
        var seen: [String: Int] = [:]
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.hasSuffix("\r") ? String($0.dropLast()) : String($0)
        }
        var index = 0
        while index < lines.count {
            let lineNumber = index + 1
            var scanner = ConfigScanner(Array(lines[index].unicodeScalars))
            index += 1
            scanner.skipWhitespace()
            if scanner.atEndOrComment { continue }
            if scanner.peek == "[" {
                throw error(lineNumber, nil, "tables ([section]) are not supported; put every key at the top level")
            }
            let key = scanner.readBareKey()
            guard !key.isEmpty else {
                throw error(lineNumber, nil, "expected 'key = value'")
            }
            scanner.skipWhitespace()
            if scanner.peek == "." {
                throw error(lineNumber, key, "dotted keys are not supported")
            }
            guard scanner.consume("=") else {
                throw error(lineNumber, key, "expected '=' after the key")
            }
            if let first = seen[key] {
                throw error(lineNumber, key, "is set twice (first on line \(first))")
            }
            // An array may continue on the following lines until its ']' closes.
            while true {
                var probe = scanner
                do throws(ConfigScanner.Failure) {
                    let value = try probe.readValue()
                    probe.skipWhitespace()
                    guard probe.atEndOrComment else {
                        throw ConfigScanner.Failure(message: "unexpected text after the value")
                    }
                    entries.append(Entry(key: key, value: value, line: lineNumber))
                    seen[key] = lineNumber
                    break
                } catch let failure {
                    if failure.needsMoreInput, index < lines.count {
                        scanner.append(Array(("\n" + lines[index]).unicodeScalars))
                        index += 1
                        continue
                    }
                    throw error(lineNumber, key, failure.message)
                }
            }
        }
        return entries
    }

    private func error(_ line: Int, _ key: String?, _ message: String) -> ConfigurationError {
        ConfigurationError(file: fileName, line: line, key: key, message: message)
    }
}
