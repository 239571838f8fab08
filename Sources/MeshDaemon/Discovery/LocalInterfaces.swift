#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The IP addresses of this machine's interfaces that are up and have a carrier (loopback
/// left out): what the node compares over time to notice a new DHCP lease, an address that
/// went away, or an interface going down and up.
struct LocalInterfaces: Sendable, Equatable {
    /// One address on one interface.
    struct Address: Hashable, Sendable, Comparable, CustomStringConvertible {
        /// Interface name, e.g. `eth0`.
        var interface: String
        /// IPv4 or IPv6 literal, without scope.
        var host: String

        static func < (lhs: Address, rhs: Address) -> Bool { (lhs.interface, lhs.host) < (rhs.interface, rhs.host) }
        var description: String { "\(host)@\(interface)" }
    }

    /// What differs between two snapshots.
    struct Difference: Sendable, Equatable {
        /// Addresses that are new (or whose interface came back up).
        var appeared: Set<Address>
        /// Addresses that are gone (or whose interface went down).
        var vanished: Set<Address>

        /// True when nothing changed.
        var isEmpty: Bool { appeared.isEmpty && vanished.isEmpty }
        /// Hosts that are no longer usable as a local address at all.
        func vanishedHosts(stillPresent now: LocalInterfaces) -> Set<String> {
            Set(vanished.map(\.host)).subtracting(now.hosts)
        }
    }

    /// The addresses.
    var addresses: Set<Address>

    /// The hosts of ``addresses``.
    var hosts: Set<String> { Set(addresses.map(\.host)) }

    /// What changed from `old` to this snapshot.
    func difference(from old: LocalInterfaces) -> Difference {
        Difference(appeared: addresses.subtracting(old.addresses), vanished: old.addresses.subtracting(addresses))
    }

    /// The current addresses (`getifaddrs`); nil when the call fails, which the caller must
    /// treat as "unknown", never as every address gone.
    static func current() -> LocalInterfaces? {
        var head: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&head) == 0, let first = head else { return nil }
        defer { freeifaddrs(head) }
        var found = Set<Address>()
        var node: UnsafeMutablePointer<ifaddrs>? = first
        var visited = 0
        while let current = node, visited < 4096 {
            visited += 1
            node = current.pointee.ifa_next
            let flags = current.pointee.ifa_flags
            guard flags & upAndRunning == upAndRunning, flags & loopback == 0,
                  let address = current.pointee.ifa_addr, let name = current.pointee.ifa_name,
                  let host = text(of: address) else { continue }
            found.insert(Address(interface: String(cString: name), host: host))
        }
        return LocalInterfaces(addresses: found)
    }

    private static let upAndRunning: UInt32 = 0x1 | 0x40   // IFF_UP | IFF_RUNNING
    private static let loopback: UInt32 = 0x8               // IFF_LOOPBACK

    /// The IP literal of an AF_INET/AF_INET6 socket address; nil for other families.
    private static func text(of address: UnsafeMutablePointer<sockaddr>) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = Int32(address.pointee.sa_family)
        let raw = UnsafeRawPointer(address)
        return buffer.withUnsafeMutableBufferPointer { out -> String? in
            let printed: UnsafePointer<CChar>?
            switch family {
            case AF_INET:
                var v4 = raw.loadUnaligned(as: sockaddr_in.self).sin_addr
                printed = inet_ntop(AF_INET, &v4, out.baseAddress, socklen_t(out.count))
            case AF_INET6:
                var v6 = raw.loadUnaligned(as: sockaddr_in6.self).sin6_addr
                printed = inet_ntop(AF_INET6, &v6, out.baseAddress, socklen_t(out.count))
            default:
                printed = nil
            }
            return printed.map { String(cString: $0) }
        }
    }
}
