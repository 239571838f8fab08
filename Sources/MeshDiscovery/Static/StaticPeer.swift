#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One configured peer address, for networks without multicast.
public struct StaticPeer: Sendable, Hashable, CustomStringConvertible {
    /// Name reported as ``DiscoveredService/instanceName``; defaults to `HOST:PORT`.
    public var name: String
    /// IPv4/IPv6 literal (no brackets) or a DNS name.
    public var host: String
    /// UDP/TCP port of the peer's daemon.
    public var port: UInt16

    /// Creates a peer; `name` defaults to the address text.
    public init(host: String, port: UInt16, name: String? = nil) {
        self.host = host
        self.port = port
        self.name = name ?? StaticPeer.text(host: host, port: port)
    }

    /// Parses `HOST:PORT` or `[IPV6]:PORT` as written in a config file or on a command line.
    ///
    /// - Throws: ``DiscoveryError/Code/invalidStaticPeer`` saying what is wrong.
    public init(parsing text: String, name: String? = nil) throws(DiscoveryError) {
        func invalid(_ why: String) -> DiscoveryError {
            DiscoveryError(code: .invalidStaticPeer, message: "static peer '\(text)': \(why); write HOST:PORT or [IPV6]:PORT")
        }
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw invalid("missing ']'") }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw invalid("missing ':PORT' after ']'") }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw invalid("missing ':PORT'") }
            host = text[..<colon]
            guard !host.contains(":") else { throw invalid("an IPv6 address needs brackets") }
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, host.utf8.count <= 253, !host.contains(where: { $0.isWhitespace }) else {
            throw invalid("empty or malformed host")
        }
        guard portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = UInt16(portText), port != 0 else {
            throw invalid("port must be 1 to 65535")
        }
        self.init(host: String(host), port: port, name: name)
    }

    /// The family of ``host``: an IP literal, or a name to resolve.
    public var family: DiscoveredAddress.Family {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return .ipv4 }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return .ipv6 }
        return .hostName
    }

    /// `HOST:PORT` or `[V6]:PORT`.
    public var description: String { StaticPeer.text(host: host, port: port) }

    /// This peer as a discovered service.
    var service: DiscoveredService {
        DiscoveredService(instanceName: name, source: .staticConfiguration,
                          addresses: [DiscoveredAddress(host: host, port: port, family: family)])
    }

    private static func text(host: String, port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
