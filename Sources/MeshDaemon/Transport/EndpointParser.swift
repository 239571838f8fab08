/// Parses `HOST:PORT` and `[IPv6]:PORT` text into a configuration endpoint.
enum EndpointParser {
    /// The endpoint, or nil when the text is not `HOST:PORT` with a port in 1…65535.
    static func parse(_ text: String) -> DaemonConfiguration.Endpoint? {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            guard !host.contains(":") else { return nil }
        }
        guard !host.isEmpty, let port = Int(portText), (1...65_535).contains(port) else { return nil }
        return DaemonConfiguration.Endpoint(host: String(host), port: port)
    }
}
