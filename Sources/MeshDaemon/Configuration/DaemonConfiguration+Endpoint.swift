import Foundation

extension DaemonConfiguration.Endpoint {
    /// Parses `HOST:PORT`, `[IPV6]:PORT` or `NAME:PORT`.
    ///
    /// A bare IPv6 address must be bracketed (`[::1]:47470`), since its colons would make the
    /// port ambiguous. `allowPortZero` is for listen addresses (0 picks a free port).
    /// Throws a message naming what is wrong, without a location (the caller adds it).
    public init(parsing text: String, allowPortZero: Bool = false) throws(ConfigurationError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let host: Substring
        let portText: Substring
        if trimmed.hasPrefix("[") {
            guard let close = trimmed.firstIndex(of: "]") else {
                throw ConfigurationError(message: "'\(text)' has '[' without ']'; write IPv6 as [ADDR]:PORT")
            }
            host = trimmed[trimmed.index(after: trimmed.startIndex)..<close]
            let rest = trimmed[trimmed.index(after: close)...]
            guard rest.hasPrefix(":") else {
                throw ConfigurationError(message: "'\(text)' has no ':PORT' after ']'; write [ADDR]:PORT")
            }
            portText = rest.dropFirst()
            guard host.contains(":") else {
                throw ConfigurationError(message: "'\(text)': brackets are only for IPv6 addresses")
            }
        } else {
            guard let colon = trimmed.lastIndex(of: ":") else {
                throw ConfigurationError(message: "'\(text)' has no port; write HOST:PORT, e.g. 127.0.0.1:\(DaemonConfiguration.defaultPort)")
            }
            host = trimmed[..<colon]
            portText = trimmed[trimmed.index(after: colon)...]
            guard !host.contains(":") else {
                throw ConfigurationError(message: "'\(text)' looks like an IPv6 address; write it as [ADDR]:PORT")
            }
        }
        guard !host.isEmpty else {
            throw ConfigurationError(message: "'\(text)' has no host; write HOST:PORT")
        }
        guard host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" || $0 == "%" || $0 == "_" }),
              host.allSatisfy(\.isASCII) else {
            throw ConfigurationError(message: "'\(text)': '\(host)' is not a valid host name or address")
        }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber),
              let port = Int(portText), port <= 65_535 else {
            throw ConfigurationError(message: "'\(text)': port must be a number from \(allowPortZero ? 0 : 1) to 65535")
        }
        guard port > 0 || allowPortZero else {
            throw ConfigurationError(message: "'\(text)': port must be a number from 1 to 65535")
        }
        self.init(host: String(host), port: port)
    }
}
