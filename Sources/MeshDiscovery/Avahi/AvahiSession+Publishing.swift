import CAvahiClient

/// Publishing the advertisement through one entry group (poll lock held in every method).
///
/// Avahi's rules followed here: publish only while the client is RUNNING; on a collision take
/// `avahi_alternative_service_name` and re-add to the same group (never free and re-create
/// it); change TXT in place with `update_service_txt`, and reset + re-add for a new name/port.
extension AvahiSession {
    /// Upper bound on renames in a row after collisions, so a hostile network cannot keep the
    /// loop going forever.
    static let maximumCollisionRenames = 32

    /// Replaces the advertisement (called through ``withPollLock(_:)``).
    func setAdvertisement(_ new: DiscoveryAdvertisement?) {
        let old = advertisement
        advertisement = new
        guard let new else {
            if let group { resetGroup(group) }
            publishedName = nil
            hub.withdrawn()
            logger.info("mDNS advertisement withdrawn")
            return
        }
        guard old != new else { return }
        if old?.instanceName != new.instanceName || old?.port != new.port {
            if let group { resetGroup(group) }
            publishedName = new.instanceName
            advertisedPorts.insert(new.port)
            hub.withdrawn()
            publishIfNeeded()
            return
        }
        guard let group, avahi_entry_group_is_empty(group) == 0, publishedName != nil else {
            publishIfNeeded()
            return
        }
        guard avahi_entry_group_get_state(group) == Int32(AVAHI_ENTRY_GROUP_ESTABLISHED.rawValue) else {
            // Still probing: avahi-daemon would take the echo of its own probe, which carries
            // the old TXT, for another host's claim on the name and rename us (avahi/avahi#654).
            // The new TXT goes out once probing is over.
            logger.debug("mDNS TXT update waits until the service is established")
            return
        }
        updateTXT(group, to: new)
    }

    /// Replaces the published TXT record in place with `new`'s (the group is established).
    private func updateTXT(_ group: OpaquePointer, to new: DiscoveryAdvertisement) {
        guard let name = publishedName else { return }
        let list = AvahiSession.makeStringList(new.txtRecord.strings)
        defer { avahi_string_list_free(list) }
        let rc = configuration.serviceType.withCString { type in
            name.withCString { name in
                avahi_entry_group_update_service_txt_strlst(group, AvahiSession.anyInterface, AvahiSession.anyProtocol,
                                                            AvahiPublishFlags(0), name, type, nil, list)
            }
        }
        if rc < 0 {
            logger.warning("could not update the mDNS TXT record; re-publishing",
                           metadata: ["error": "\(AvahiSession.describe(rc))"])
            resetGroup(group)
            publishIfNeeded()
            return
        }
        committedTXT = new.txtRecord.strings
        logger.info("mDNS advertisement updated", metadata: ["pairing": "\(new.pairingHint == nil ? "off" : "on")"])
    }

    /// Adds and commits the service when there is something to publish and nothing published.
    func publishIfNeeded() {
        guard let client, isRunning, advertisement != nil else { return }
        if group == nil {
            group = avahi_entry_group_new(client, { g, state, userdata in
                AvahiSession.from(userdata)?.groupStateChanged(g, state)
            }, userdata)
            guard group != nil else {
                logger.error("could not create an Avahi entry group; retrying",
                             metadata: ["error": "\(AvahiSession.describe(avahi_client_errno(client)))"])
                scheduleRetry(growing: true)
                return
            }
        }
        guard let group, avahi_entry_group_is_empty(group) != 0 else { return }
        addServiceAndCommit(group, renamesLeft: AvahiSession.maximumCollisionRenames)
    }

    private func addServiceAndCommit(_ group: OpaquePointer, renamesLeft: Int) {
        guard let advertisement else { return }
        let name = publishedName ?? advertisement.instanceName
        publishedName = name
        let list = AvahiSession.makeStringList(advertisement.txtRecord.strings)
        defer { avahi_string_list_free(list) }
        let added = configuration.serviceType.withCString { type in
            name.withCString { name in
                avahi_entry_group_add_service_strlst(group, AvahiSession.anyInterface, AvahiSession.anyProtocol,
                                                     AvahiPublishFlags(0), name, type, nil, nil, advertisement.port, list)
            }
        }
        if added == Int32(AVAHI_ERR_COLLISION) {
            // Another client on this host already uses the name: pick the next one now.
            rename(group, renamesLeft: renamesLeft)
            return
        }
        guard added >= 0 else {
            logger.error("could not add the mDNS service; retrying",
                         metadata: ["error": "\(AvahiSession.describe(added))", "service.name": "\(name)"])
            resetGroup(group)
            scheduleRetry(growing: true)
            return
        }
        let committed = avahi_entry_group_commit(group)
        guard committed >= 0 else {
            logger.error("could not commit the mDNS service; retrying",
                         metadata: ["error": "\(AvahiSession.describe(committed))"])
            resetGroup(group)
            scheduleRetry(growing: true)
            return
        }
        committedTXT = advertisement.txtRecord.strings
        logger.info("publishing mDNS service", metadata: [
            "service.name": "\(name)", "port": "\(advertisement.port)",
            "pairing": "\(advertisement.pairingHint == nil ? "off" : "on")",
        ])
    }

    /// Takes Avahi's alternative name ("name #2", …) and publishes again.
    private func rename(_ group: OpaquePointer, renamesLeft: Int) {
        guard renamesLeft > 0, let current = publishedName ?? advertisement?.instanceName,
              let alternative = avahi_alternative_service_name(current) else {
            logger.error("giving up on mDNS service-name collisions; advertisement not published")
            return
        }
        let next = String(cString: alternative)
        avahi_free(alternative)
        logger.info("mDNS service name taken on the network; renaming",
                    metadata: ["service.name": "\(current)", "service.new-name": "\(next)"])
        publishedName = next
        resetGroup(group)
        addServiceAndCommit(group, renamesLeft: renamesLeft - 1)
    }

    /// Empties the entry group (nothing published until the next commit).
    func resetGroup(_ group: OpaquePointer) {
        avahi_entry_group_reset(group)
        committedTXT = nil
    }

    private func groupStateChanged(_ g: OpaquePointer?, _ state: AvahiEntryGroupState) {
        guard let g, group == nil || group == g else { return }
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            if let name = publishedName {
                logger.info("mDNS service published", metadata: ["service.name": "\(name)"])
                hub.published(instanceName: name)
            }
            if let advertisement, committedTXT != advertisement.txtRecord.strings {
                updateTXT(g, to: advertisement)
            }
        case AVAHI_ENTRY_GROUP_COLLISION:
            rename(g, renamesLeft: AvahiSession.maximumCollisionRenames)
        case AVAHI_ENTRY_GROUP_FAILURE:
            let error = client.map { avahi_client_errno($0) } ?? 0
            logger.error("mDNS publishing failed; retrying", metadata: ["error": "\(AvahiSession.describe(error))"])
            resetGroup(g)
            scheduleRetry(growing: true)
        default:
            break
        }
    }
}
