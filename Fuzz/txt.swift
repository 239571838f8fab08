import CAvahiClient
@testable import MeshDiscovery

// libFuzzer harness `txt`: a peer's mDNS TXT record, from any host on the LAN.
//
// The input is TXT RDATA as it arrives in a DNS packet (length-prefixed strings). Avahi's own
// parser (`avahi_string_list_parse`) turns it into the string list a resolver callback gets;
// `AvahiSession.strings(of:)` and `DiscoveryTXTRecord(parsing:)` read it as meshd does, and the
// record goes into an `MDNSServiceTable`. A parsed record must parse back from its own strings.
func fuzzTXT(_ bytes: [UInt8]) {
    var list: UnsafeMutablePointer<AvahiStringList>?
    let status = bytes.withUnsafeBytes { avahi_string_list_parse($0.baseAddress, $0.count, &list) }
    defer { avahi_string_list_free(list) }
    guard status >= 0 else { return }
    let entries = AvahiSession.strings(of: list)
    let record = DiscoveryTXTRecord(parsing: entries)
    if DiscoveryTXTRecord(parsingStrings: record.strings) != record {
        fuzzFailure("a parsed TXT record does not parse back from its own strings")
    }
    var table = MDNSServiceTable()
    let key = MDNSServiceTable.InstanceKey(interfaceIndex: 1, ipv6: false, name: "peer", domain: "local")
    let address = DiscoveredAddress(host: "192.0.2.1", port: 47470, family: .ipv4, interfaceIndex: 1, interfaceName: "eth0")
    _ = table.resolved(key, address: address, hostName: "peer.local", txt: record)
    _ = table.service(named: "peer")
    _ = table.removed(key)
}
