import CAvahiClient
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Conversions between Avahi's C values and this module's Swift values; nothing here keeps
/// a C pointer beyond the call.
extension AvahiSession {
    static var anyInterface: AvahiIfIndex { AvahiIfIndex(AVAHI_IF_UNSPEC) }
    static var anyProtocol: AvahiProtocol { AvahiProtocol(AVAHI_PROTO_UNSPEC) }
    static var ipv4: AvahiProtocol { AvahiProtocol(AVAHI_PROTO_INET) }
    static var ipv6: AvahiProtocol { AvahiProtocol(AVAHI_PROTO_INET6) }

    /// A string list in the given order. The caller frees it with `avahi_string_list_free`.
    static func makeStringList(_ strings: [String]) -> UnsafeMutablePointer<AvahiStringList>? {
        var list: UnsafeMutablePointer<AvahiStringList>?
        // avahi_string_list_add prepends, so add in reverse.
        for string in strings.reversed() { list = avahi_string_list_add(list, string) }
        return list
    }

    /// The raw bytes of each TXT string (at most 256 strings).
    static func strings(of list: UnsafeMutablePointer<AvahiStringList>?) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var node = list
        while let current = node, out.count < 256 {
            let size = avahi_string_list_get_size(current)
            if let text = avahi_string_list_get_text(current) {
                out.append(Array(UnsafeBufferPointer(start: text, count: size)))
            }
            node = avahi_string_list_get_next(current)
        }
        return out
    }

    /// A resolved address as a value, with its interface.
    static func makeAddress(_ address: UnsafePointer<AvahiAddress>, port: UInt16, interface: AvahiIfIndex) -> DiscoveredAddress? {
        var text = [CChar](repeating: 0, count: 64)
        let printed = text.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let base = buffer.baseAddress, avahi_address_snprint(base, buffer.count, address) != nil else { return nil }
            return String(cString: base)
        }
        guard let host = printed else { return nil }
        let family: DiscoveredAddress.Family = address.pointee.proto == ipv6 ? .ipv6 : .ipv4
        return DiscoveredAddress(host: host, port: port, family: family,
                                 interfaceIndex: interface > 0 ? interface : nil,
                                 interfaceName: interfaceName(interface))
    }

    /// `eth0` for an interface index, nil when unknown.
    static func interfaceName(_ index: AvahiIfIndex) -> String? {
        guard index > 0 else { return nil }
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        return name.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let base = buffer.baseAddress, if_indextoname(UInt32(index), base) != nil else { return nil }
            return String(cString: base)
        }
    }
}
