import CAvahiClient
import Logging

/// Browsing and resolving (poll lock held in every method).
///
/// One resolver per (interface, protocol, name) stays alive while the browser lists the
/// instance: Avahi re-runs it when the peer's address or TXT records change, which is how an
/// address change or the pairing flag reaches us without polling.
///
/// Our own advertisement is recognised by its resolution — SRV target is this host's name
/// and the port is one we advertised — not by Avahi's LOCAL/OUR_OWN flags, which Avahi sets
/// by name and so also on a peer that briefly used the same name during a collision.
extension AvahiSession {
    func browseIfNeeded() {
        guard configuration.browse, browser == nil, let client, isRunning else { return }
        browser = configuration.serviceType.withCString { type in
            avahi_service_browser_new(client, AvahiSession.anyInterface, AvahiSession.anyProtocol, type, nil,
                                      AvahiLookupFlags(0), { b, interface, proto, event, name, _, domain, _, userdata in
                AvahiSession.from(userdata)?.browserEvent(b, interface, proto, event, name, domain)
            }, userdata)
        }
        if browser == nil {
            logger.error("could not start browsing; retrying",
                         metadata: ["error": "\(AvahiSession.describe(avahi_client_errno(client)))"])
            scheduleRetry(growing: true)
        } else {
            logger.info("browsing for mDNS services", metadata: ["service.type": "\(configuration.serviceType)"])
        }
    }

    /// Frees every resolver and the browser; forgets resolved instances.
    func freeBrowsing() {
        for resolver in resolvers.values { avahi_service_resolver_free(resolver) }
        resolvers.removeAll()
        resolvedHostNames.removeAll()
        if let browser { avahi_service_browser_free(browser) }
        browser = nil
        table.removeAll()
    }

    private func browserEvent(_ b: OpaquePointer?, _ interface: AvahiIfIndex, _ proto: AvahiProtocol,
                              _ event: AvahiBrowserEvent, _ name: UnsafePointer<CChar>?,
                              _ domain: UnsafePointer<CChar>?) {
        guard let b, b == browser, let client else { return }
        switch event {
        case AVAHI_BROWSER_NEW, AVAHI_BROWSER_REMOVE:
            guard let name, let domain else { return }
            let key = MDNSServiceTable.InstanceKey(interfaceIndex: interface, ipv6: proto == AvahiSession.ipv6,
                                                   name: String(cString: name), domain: String(cString: domain))
            if event == AVAHI_BROWSER_REMOVE {
                if let resolver = resolvers.removeValue(forKey: key) { avahi_service_resolver_free(resolver) }
                resolvedHostNames[key] = nil
                if let change = table.removed(key) { apply(change) }
                return
            }
            guard resolvers[key] == nil else { return }
            guard let resolver = makeResolver(key) else {
                logger.warning("could not resolve an mDNS service", metadata: [
                    "service.name": "\(key.name)", "error": "\(AvahiSession.describe(avahi_client_errno(client)))",
                ])
                return
            }
            resolvers[key] = resolver
            logger.debug("mDNS service seen; resolving", metadata: ["service.name": "\(key.name)", "interface": "\(interface)"])
        case AVAHI_BROWSER_FAILURE:
            logger.error("mDNS browsing failed; retrying",
                         metadata: ["error": "\(AvahiSession.describe(avahi_client_errno(client)))"])
            for name in table.names { _ = hub.removed(instanceName: name, source: .mdns) }
            freeBrowsing()
            scheduleRetry(growing: true)
        default:
            break
        }
    }

    /// A resolver for the address family of the transport the instance was seen on (A over
    /// IPv4, AAAA over IPv6), so a dual-stack peer yields both.
    private func makeResolver(_ key: MDNSServiceTable.InstanceKey) -> OpaquePointer? {
        guard let client else { return nil }
        let proto = key.ipv6 ? AvahiSession.ipv6 : AvahiSession.ipv4
        return configuration.serviceType.withCString { type in
            key.name.withCString { name in
                key.domain.withCString { domain in
                    avahi_service_resolver_new(client, key.interfaceIndex, proto, name, type, domain, proto, AvahiLookupFlags(0), {
                        r, interface, proto, event, name, _, domain, host, address, port, txt, _, userdata in
                        AvahiSession.from(userdata)?.resolverEvent(r, interface, proto, event, name, domain, host, address, port, txt)
                    }, userdata)
                }
            }
        }
    }

    private func resolverEvent(_ r: OpaquePointer?, _ interface: AvahiIfIndex, _ proto: AvahiProtocol,
                               _ event: AvahiResolverEvent, _ name: UnsafePointer<CChar>?,
                               _ domain: UnsafePointer<CChar>?, _ host: UnsafePointer<CChar>?,
                               _ address: UnsafePointer<AvahiAddress>?, _ port: UInt16,
                               _ txt: UnsafeMutablePointer<AvahiStringList>?) {
        guard let r, let name, let domain else { return }
        let key = MDNSServiceTable.InstanceKey(interfaceIndex: interface, ipv6: proto == AvahiSession.ipv6,
                                               name: String(cString: name), domain: String(cString: domain))
        guard resolvers[key] == r else { return }
        guard event == AVAHI_RESOLVER_FOUND else {
            // A resolver that times out stays alive and reports again when the records return.
            logger.debug("mDNS resolver has no answer yet", metadata: ["service.name": "\(key.name)"])
            return
        }
        guard let address, let resolved = AvahiSession.makeAddress(address, port: port, interface: interface) else { return }
        let hostName = host.map { String(cString: $0) } ?? ""
        if let previous = resolvedHostNames[key], previous != hostName {
            // The instance now points at another host. Avahi's resolver keeps the old host's
            // address record in that case, so resolve afresh instead of trusting this answer.
            logger.debug("mDNS service moved to another host; resolving again", metadata: ["service.name": "\(key.name)"])
            avahi_service_resolver_free(r)
            resolvers[key] = makeResolver(key)
            resolvedHostNames[key] = nil
            return
        }
        resolvedHostNames[key] = hostName
        if isOwn(hostName: hostName, port: port) {
            if let change = table.removed(key) { apply(change) }
            return
        }
        let record = DiscoveryTXTRecord(parsing: AvahiSession.strings(of: txt))
        apply(table.resolved(key, address: resolved, hostName: hostName, txt: record))
    }

    /// True for our own advertisement: on this host's mDNS name, at a port we advertised.
    private func isOwn(hostName: String, port: UInt16) -> Bool {
        guard advertisedPorts.contains(port), let client, let own = avahi_client_get_host_name_fqdn(client) else {
            return false
        }
        return hostName.lowercased() == String(cString: own).lowercased()
    }

    private func apply(_ change: MDNSServiceTable.Change) {
        switch change {
        case .updated(let service):
            if hub.resolved(service) {
                logger.info("mDNS peer resolved", metadata: [
                    "service.name": "\(service.instanceName)",
                    "addresses": "\(service.addresses.map(\.description).joined(separator: " "))",
                    "pairing": "\(service.acceptsPairing ? "on" : "off")",
                ])
            }
        case .removed(let name):
            if hub.removed(instanceName: name, source: .mdns) {
                logger.info("mDNS peer removed", metadata: ["service.name": "\(name)"])
            }
        }
    }
}
