import MeshCrypto
import MeshCore
import NIOCore

/// The joiner's side of pairing: `PairingJoinExchange` runs the messages with the inviter; the
/// node stores the inviter, then connects the channel at once.
extension MeshNode {
    /// Pairs with the daemon that shows `code`: at `address` (`HOST:PORT`), or, when `address`
    /// is nil, the one discovery finds advertising the code's public hint (see
    /// `PairingByCode`). With `replace` false, an inviter this daemon is already paired with is
    /// not stored again (`already-paired`).
    public func joinPairing(code: String, address: String?, replace: Bool = false) async throws -> PairedDevice {
        let request = try PairingJoinRequest(code: code, address: address)
        guard phase == .running else {
            throw MeshError.notRunning
        }
        guard let endpoint = request.endpoint else { return try await joinPairingByDiscovery(request.code, replace: replace) }
        return try await joinPairing(request.code, at: endpoint, replace: replace)
    }

    /// Runs pairing with the daemon at `endpoint`, stores it and dials it. Throws
    /// `MeshError` (wrong code, refused, unreachable, that is this daemon, already paired).
    func joinPairing(_ parsed: PairingCode, at endpoint: DaemonConfiguration.Endpoint,
                     replace: Bool) async throws -> PairedDevice {
        let joiner = try PairingJoiner(code: parsed, identity: PairingLocalIdentity(keyPair: identity.keyPair,
                                                                                   name: configuration.name))
        let exchange = PairingJoinExchange(endpoint: endpoint, timeout: tuning.pairingAttemptTimeout)
        let outcome: PairingOutcome
        do {
            outcome = try await exchange.run(joiner) { endpoint, timeout in
                try await self.connectWire(to: endpoint, timeout: timeout)
            }
        } catch let error as PairingError {
            counters.pairingAttemptsFailed += 1
            throw error.controlError
        } catch {
            counters.pairingAttemptsFailed += 1
            throw error
        }
        do {
            try PairingJoinRequest.accept(outcome, localPublicKey: identity.keyPair.publicKey,
                                          existing: channels.peers[outcome.peerDeviceID]?.record, replace: replace)
        } catch {
            if error.kind == .alreadyPaired { counters.pairingsRefusedAlreadyPaired += 1 }
            throw error
        }
        let device = storePairing(outcome, address: PeerAddress(address: endpoint.description, source: .pairing))
        scheduleDial(outcome.peerDeviceID, immediately: true)
        return device
    }
}
