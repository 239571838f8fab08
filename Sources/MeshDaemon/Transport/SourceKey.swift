import NIOCore

/// The key under which per-source limits count a connection's source address.
///
/// - an IPv4 address is itself (`198.18.0.7`);
/// - an IPv4-mapped IPv6 address (`::ffff:198.18.0.7`, what a dual-stack socket reports for an
///   IPv4 peer) is the IPv4 address it maps, so one host has one key on either socket;
/// - any other IPv6 address is its /64 (`2001:db8:1:2::/64`, scope dropped): a host that
///   picks a fresh address from its prefix per connection (privacy addresses, or an attacker
///   rotating through its /64) still counts as one source.
///
/// Text that is no IP address (a Unix socket, "?") is its own key.
enum SourceKey {
    /// The key of `host` (an IP address as sockets report it, with or without `%scope`).
    static func of(_ host: String) -> String {
        let unscoped = host.split(separator: "%", maxSplits: 1).first.map(String.init) ?? host
        guard unscoped.contains(":"), let address = try? SocketAddress(ipAddress: unscoped, port: 0),
              case .v6(let v6) = address else { return unscoped }
        let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        guard bytes.count == 16 else { return unscoped }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }
}
