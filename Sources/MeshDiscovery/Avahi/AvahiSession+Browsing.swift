import CAvahiClient
import Logging

/// Browsing and resolving (poll lock held in every method).
///
/// One resolver per (interface, protocol, name) stays alive while the browser lists the
/// instance: Avahi re-runs it when the peer's address or TXT records change, which is how an
/// address change or the pairing flag reaches us without polling.
extension AvahiSession {
    func browseIfNeeded() {
        guard configuration.browse, browser == nil, let client, isRunning else { return }
        browser = configuration.serviceType.withCString { type in
            avahi_service_browser_new(client, AvahiSession.anyInterface, AvahiSession.anyProtocol, type, nil,
                                      AvahiLookupFlags(0), { b, interface, proto, event, name, _, domain, flags, userdata in
                AvahiSession.from(userdata)?.browserEvent(b, interface, proto, event, name, domain, flags)
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
        if let browser { avahi_service_browser_free(browser) }
        browser = nil
        table.removeAll()
    }

    private func browserEvent(_ b: OpaquePointer?, _ interface: AvahiIfIndex, _ proto: AvahiProtocol,
                              _ event: AvahiBrowserEvent, _ name: UnsafePointer<CChar>?,
                              _ domain: UnsafePointer<CChar>?, _ flags: AvahiLookupResultFlags) {
        guard let b, b == browser, let client else { return }
        switch event {
        case AVAHI_BROWSER_NEW, AVAHI_BROWSER_REMOVE:
            guard let name, let domain else { return }
            let key = MDNSServiceTable.InstanceKey(interfaceIndex: interface, ipv6: proto == AvahiSession.ipv6,
                                                   name: String(cString: name), domain: String(cString: domain))
            if event == AVAHI_BROWSER_REMOVE {
                if let resolver = resolvers.removeValue(forKey: key) { avahi_service_resolver_free(resolver) }
                if let change = table.removed(key) { apply(change) }
                return
            }
            if flags.rawValue & AVAHI_LOOKUP_RESULT_OUR_OWN.rawValue != 0 {
                logger.trace("ignoring our own mDNS service", metadata: ["service.name": "\(key.name)"])
                return
            }
            guard resolvers[key] == nil else { return }
            // Resolve the address family of the transport the instance was seen on: A over
            // IPv4, AAAA over IPv6, so a dual-stack peer yields both.
            let resolver = configuration.serviceType.withCString { type in
                avahi_service_resolver_new(client, interface, proto, name, type, domain, proto, AvahiLookupFlags(0), {
                    r, interface, proto, event, name, _, domain, host, address, port, txt, _, userdata in
                    AvahiSession.from(userdata)?.resolverEvent(r, interface, proto, event, name, domain, host, address, port, txt)
                }, userdata)
            }
            guard let resolver else {
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
            for service in Set(resolvers.keys.map(\.name)) { _ = hub.removed(instanceName: service, source: .mdns) }
            freeBrowsing()
            scheduleRetry(growing: true)
        default:
            break
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
        switch event {
        case AVAHI_RESOLVER_FOUND:
            guard let address, let resolved = AvahiSession.makeAddress(address, port: port, interface: interface) else {
                return
            }
            let record = DiscoveryTXTRecord(parsing: AvahiSession.strings(of: txt))
            apply(table.resolved(key, address: resolved, hostName: host.map { String(cString: $0) } ?? "", txt: record))
        default:
            // A resolver that times out stays alive and reports again when the records return.
            logger.debug("mDNS resolver has no answer yet", metadata: ["service.name": "\(key.name)"])
        }
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
