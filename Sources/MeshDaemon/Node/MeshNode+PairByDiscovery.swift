import MeshCrypto
import MeshDiscovery
import MeshCore

/// Pairing by code alone: find the inviters advertising the code's public hint, then let
/// `PairingByCode` try them (see docs/PAIRING.md, "Pairing without an address").
extension MeshNode {
    /// Finds the inviter advertising `code.publicHint` and pairs with it.
    func joinPairingByDiscovery(_ code: PairingCode, replace: Bool) async throws -> PairedDevice {
        // meshd always has a discovery (static peers at least); with mdns off nothing would
        // ever show the hint, so say so at once instead of "searching" 5 s.
        guard discovery != nil, configuration.mdns else {
            throw MeshError(.discoveryOff, "this daemon runs without discovery (mdns = false or --no-mdns); pass --address HOST:PORT of the device that shows the code")
        }
        let inviters = try await findInviters(hint: code.publicHint)
        return try await PairingByCode.pair(with: inviters, hint: code.publicHint, logger: logger) { endpoint in
            try await joinPairing(code, at: endpoint, replace: replace)
        }
    }

    /// Services advertising `hint`: at once when discovery shows some, else as soon as it
    /// does (`applyDiscovery` ends the search), up to `PairingByCode.searchSeconds` (a timer on
    /// the node's loop).
    func findInviters(hint: String) async throws -> [DiscoveredService] {
        var found = discovered.inviters(hint: hint)
        if found.isEmpty, phase == .running {
            let id = inviterSearches.reserve()
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    guard !Task.isCancelled else {
                        continuation.resume()
                        return
                    }
                    let deadline = loop.scheduleTask(in: .nanoseconds(Int64(PairingByCode.searchSeconds * 1e9))) { [weak self] in
                        guard let self else { return }
                        self.onLoop { $0.endInviterSearch(id) }
                    }
                    inviterSearches.store(id, InviterSearches.Search(hint: hint, continuation: continuation, deadline: deadline))
                }
            } onCancel: {
                // On the node's loop, after the search was stored (no task of its own).
                self.loop.execute { self.onLoop { $0.endInviterSearch(id) } }
            }
            try Task.checkCancellation()
            found = discovered.inviters(hint: hint)
        }
        if !found.isEmpty { return found }
        throw PairingByCode.noInviter(hint: hint, reason: discovered.mdnsAvailable == false ? discovered.unavailableReason : nil)
    }

    /// Ends search `id` (its deadline passed or its request was cancelled).
    func endInviterSearch(_ id: UInt64) {
        if let search = inviterSearches.end(id) { finish(search) }
    }

    /// Resumes a search that ended and cancels its deadline.
    func finish(_ search: InviterSearches.Search) {
        search.deadline.cancel()
        search.continuation.resume()
    }
}
