import MeshCrypto
import MeshDiscovery
import MeshCore
import NIOCore

/// The joiner's side of pairing: `PairingJoinExchange` runs the messages with the inviter; the
/// node stores the inviter, then connects the channel at once. Without an address, the inviters
/// advertising the code's public hint are found first and `PairingByCode` tries them (see
/// docs/PAIRING.md, "Pairing without an address").
extension NodePairing {
    /// Runs pairing with the daemon at `endpoint`, stores it and dials it. Throws
    /// `MeshError` (wrong code, refused, unreachable, that is this daemon, already paired).
    func join(_ node: isolated MeshNode, _ parsed: PairingCode, at endpoint: DaemonConfiguration.Endpoint,
              via: PairingRoute, replace: Bool, single: Bool) async throws -> PairedDevice {
        let exchange = PairingJoinExchange(endpoint: endpoint, timeout: node.tuning.pairingAttemptTimeout)
        return try await join(node, parsed, exchange: exchange, address: PeerAddress(address: endpoint.description, source: .pairing),
                              via: via, replace: replace, single: single)
    }

    /// Runs `exchange`, stores the inviter (with `address`, when the exchange had one) and dials it.
    func join(_ node: isolated MeshNode, _ parsed: PairingCode, exchange: PairingJoinExchange, address: PeerAddress?,
              via: PairingRoute, replace: Bool, single: Bool) async throws -> PairedDevice {
        let joiner = try PairingJoiner(code: parsed, identity: PairingLocalIdentity(keyPair: node.identity.keyPair,
                                                                                   name: node.configuration.name))
        let outcome: PairingOutcome
        do {
            outcome = try await exchange.run(joiner, over: node.transport)
        } catch let error as PairingError {
            node.counters.pairingAttemptsFailed += 1
            throw error.controlError
        } catch {
            node.counters.pairingAttemptsFailed += 1
            throw error
        }
        do {
            try PairingJoinRequest.accept(outcome, localPublicKey: node.identity.keyPair.publicKey,
                                          existing: node.channels.peers[outcome.peerDeviceID].flatMap { $0.record.derived ? nil : $0.record },
                                          replace: replace)
        } catch {
            if error.kind == .alreadyPaired { node.counters.pairingsRefusedAlreadyPaired += 1 }
            throw error
        }
        let device = store(node, outcome, address: address, via: via, single: single)
        node.dialer.scheduleDial(node, outcome.peerDeviceID, immediately: true)
        return device
    }

    /// Pairs with the daemon at `endpoint`; when it cannot be reached and a relay broker is
    /// configured, with whoever shows the code on the broker instead.
    func joinAtAddress(_ node: isolated MeshNode, _ code: PairingCode, at endpoint: DaemonConfiguration.Endpoint,
                       replace: Bool, single: Bool) async throws -> PairedDevice {
        do {
            return try await join(node, code, at: endpoint, via: .address, replace: replace, single: single)
        } catch let error as MeshError where error.kind == .unreachable && node.relayTransport != nil {
            node.logger.info("the inviter's address is unreachable; pairing through the relay broker")
            return try await joinByRelay(node, code, replace: replace, single: single, before: error)
        }
    }

    /// Finds the inviter advertising `code.publicHint` and pairs with it: over mDNS, then (when
    /// a relay broker is configured and nothing on the LAN answered) once through the broker.
    func joinByDiscovery(_ node: isolated MeshNode, _ code: PairingCode, replace: Bool, single: Bool) async throws -> PairedDevice {
        // meshd always has a discovery (static peers at least); with mdns off nothing would
        // ever show the hint, so say so at once instead of "searching" 5 s.
        guard node.discovery != nil, node.configuration.mdns else {
            if node.relayTransport != nil { return try await joinByRelay(node, code, replace: replace, single: single, before: nil) }
            throw MeshError(.discoveryOff, "this daemon runs without discovery (mdns = false or --no-mdns); pass --address HOST:PORT of the device that shows the code")
        }
        let searchEnds = node.clock.monotonicNanoseconds() &+ Nanoseconds.from(seconds: PairingByCode.searchSeconds)
        let hint = code.publicHint
        do {
            return try await PairingByCode.pair(hint: hint, logger: node.logger, random: SystemRandomNumberGenerator(),
                                                candidates: { tried in
                                                    try await findInviters(node, hint: hint, excluding: tried, searchEnds: searchEnds)
                                                }) { endpoint in
                try await join(node, code, at: endpoint, via: .lan, replace: replace, single: single)
            }
        } catch let error as MeshError where PairingByCode.fallsBackToRelay(error) && node.relayTransport != nil {
            // Nothing on the LAN tested a guess that stopped the search: the broker is one more
            // service, tried once (PairingByCode.maximumInvitersTried still bounds the guesses).
            return try await joinByRelay(node, code, replace: replace, single: single, before: error)
        }
    }

    /// Pairs through the relay broker's rendezvous of `code.publicHint`; `before`: why the
    /// direct ways failed (named in the error when no inviter answers there either).
    func joinByRelay(_ node: isolated MeshNode, _ code: PairingCode, replace: Bool, single: Bool, before: MeshError?) async throws -> PairedDevice {
        guard let relay = node.relay, node.relayTransport != nil else { throw before ?? MeshError.notRunning }
        let broker = relay.settings.url.host
        let exchange = PairingJoinExchange(relay: RelayAddress(broker: broker, route: .rendezvous(Array(code.publicHint.utf8))),
                                           timeout: node.tuning.pairingAttemptTimeout)
        do {
            let device = try await join(node, code, exchange: exchange, address: nil, via: .relay, replace: replace, single: single)
            node.logger.info("paired by code through the relay broker", metadata: ["relay.broker": "\(broker)"])
            return device
        } catch let error as MeshError where error.kind == .inviterNotFound || error.kind == .unreachable {
            throw PairingByCode.noInviterOnRelay(hint: code.publicHint, broker: broker, relayError: error, before: before)
        }
    }

    /// Services advertising `hint` other than those named in `excluding` (tried already): at
    /// once when discovery shows some, else as soon as it does (`PeerFinder.apply` ends the
    /// search), until monotonic `searchEnds` (a timer on the node's loop). Throws
    /// `inviter-not-found` when none showed and nothing was tried yet; empty when the ones
    /// tried are all there is.
    func findInviters(_ node: isolated MeshNode, hint: String, excluding: Set<String>,
                      searchEnds: UInt64) async throws -> [DiscoveredService] {
        func fresh() -> [DiscoveredService] {
            node.finder.discovered.inviters(hint: hint).filter { !excluding.contains($0.instanceName) }
        }
        var found = fresh()
        let now = node.clock.monotonicNanoseconds()
        if found.isEmpty, node.phase == .running, searchEnds > now {
            let id = inviterSearches.reserve()
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    guard !Task.isCancelled else {
                        continuation.resume()
                        return
                    }
                    let deadline = node.loop.scheduleTask(in: .nanoseconds(Int64(searchEnds - now))) {
                        [weak node] in
                        guard let node else { return }
                        node.onLoop { $0.pairing.endInviterSearch(id) }
                    }
                    inviterSearches.store(id, InviterSearches.Search(hint: hint, excluded: excluding, continuation: continuation,
                                                                     deadline: deadline))
                }
            } onCancel: {
                // On the node's loop, after the search was stored (no task of its own).
                node.loop.execute { node.onLoop { $0.pairing.endInviterSearch(id) } }
            }
            try Task.checkCancellation()
            found = fresh()
        }
        if !found.isEmpty || !excluding.isEmpty { return found }
        let discovered = node.finder.discovered
        throw PairingByCode.noInviter(hint: hint, reason: discovered.mdnsAvailable == false ? discovered.unavailableReason : nil)
    }

    /// Ends search `id` (its deadline passed or its request was cancelled).
    func endInviterSearch(_ id: UInt64) {
        if let search = inviterSearches.end(id) { finish(search) }
    }

    /// Discovery changed: the searches it satisfied end.
    func discoveryChanged(_ discovered: DiscoveredPeerTable) {
        for search in inviterSearches.satisfied(by: discovered) { finish(search) }
    }

    /// Resumes a search that ended and cancels its deadline.
    func finish(_ search: InviterSearches.Search) {
        search.deadline.cancel()
        search.continuation.resume()
    }
}
