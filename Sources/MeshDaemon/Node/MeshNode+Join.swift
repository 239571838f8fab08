import MeshCrypto
import MeshCore
import NIOCore
import NIOPosix

/// The joiner's side of pairing: connect to the inviter's address, run the exchange, store
/// the inviter, then connect the channel at once.
extension MeshNode {
    /// Pairs with the daemon that shows `code`: at `address` (`HOST:PORT`), or, when `address`
    /// is nil, the one discovery finds advertising the code's public hint (see
    /// `joinPairingByDiscovery`). With `replace` false, an inviter this daemon is already
    /// paired with is not stored again (`already-paired`).
    public func joinPairing(code: String, address: String?, replace: Bool = false) async throws -> PairedDevice {
        let parsed: PairingCode
        do {
            parsed = try PairingCode.parse(code)
        } catch {
            throw MeshError.invalidCode("\(error)")
        }
        var endpoint: DaemonConfiguration.Endpoint?
        if let address {
            guard let given = EndpointParser.parse(address) else {
                // The config parser's words say what is wrong (no port, port out of range, …).
                var detail = "'\(address)' is not HOST:PORT"
                do { _ = try DaemonConfiguration.Endpoint(parsing: address) } catch { detail = error.message }
                throw MeshError.invalidArgument("--address: \(detail)")
            }
            endpoint = given
        }
        guard phase == .running else {
            throw MeshError.notRunning
        }
        guard let endpoint else { return try await joinPairingByDiscovery(parsed, replace: replace) }
        return try await joinPairing(parsed, at: endpoint, replace: replace)
    }

    /// Runs pairing with the daemon at `endpoint`, stores it and dials it. Throws
    /// `MeshError` (wrong code, refused, unreachable, that is this daemon, already paired).
    func joinPairing(_ parsed: PairingCode, at endpoint: DaemonConfiguration.Endpoint,
                     replace: Bool) async throws -> PairedDevice {
        let joiner = try PairingJoiner(code: parsed, identity: PairingLocalIdentity(keyPair: identity.keyPair,
                                                                                   name: configuration.name))
        let outcome: PairingOutcome
        do {
            outcome = try await exchangePairing(joiner, with: endpoint)
        } catch let error as PairingError {
            counters.pairingAttemptsFailed += 1
            throw error.controlError
        } catch {
            counters.pairingAttemptsFailed += 1
            throw error
        }
        guard outcome.peerPublicKey != identity.keyPair.publicKey else {
            throw MeshError.invalidArgument("that address is this daemon itself")
        }
        if let existing = peers[outcome.peerDeviceID], !replace {
            counters.pairingsRefusedAlreadyPaired += 1
            throw MeshError.alreadyPaired(
                name: existing.record.name, id: outcome.peerDeviceID,
                advice: "its pairing here was kept. If the other device stored this new pairing, the channel between them fails until both hold the same one: pair again with a new code and `meshctl pair - --replace` (the other device needs `meshctl pair --replace` when it already knows this one)")
        }
        let device = storePairing(outcome, address: PeerAddress(address: endpoint.description, source: .pairing))
        scheduleDial(outcome.peerDeviceID, immediately: true)
        return device
    }

    /// Runs the joiner's messages over a kind=2 connection; throws `MeshError` or
    /// `PairingError`.
    nonisolated func exchangePairing(_ joiner: PairingJoiner,
                                     with endpoint: DaemonConfiguration.Endpoint) async throws -> PairingOutcome {
        let connection: WireConnection
        do {
            connection = try await connectWire(to: endpoint, timeout: .seconds(3))
        } catch {
            throw MeshError.unreachable(endpoint.description, Self.connectFailure(error))
        }
        let channel = connection.channel
        let timeout = TimeAmount.nanoseconds(Nanoseconds.signed(seconds: tuning.pairingAttemptTimeout))
        let deadline = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        defer { deadline.cancel() }
        var joiner = joiner
        let refused = MeshError(
            .pairingRefused,
            "the daemon at \(endpoint) ended the pairing without completing it: the code is wrong, "
                + "expired, already used, or was invalidated after too many failed attempts; create a new code")
        // After message 3 the inviter knows this device proved the code: what is left is its
        // own decision (another device used the code first, or this one is already paired there).
        let droppedAfterProof = MeshError(
            .pairingRefused,
            "the daemon at \(endpoint) checked the code and then ended the pairing: another device used the code "
                + "first, or that daemon is already paired with this one and created its code without --replace "
                + "(it says so there); create a new code")
        return try await connection.executeThenClose { inbound, _ in
            var frames = inbound.makeAsyncIterator()
            try await channel.writeAndFlush(ByteBuffer(bytes: ConnectionKind.pairing.preamble + (try WireFrame.encode(joiner.start()))))
            var provedCode = false
            for _ in 0..<8 {
                let next: WireFrame?
                do { next = try await frames.next() } catch { throw provedCode ? droppedAfterProof : refused }
                guard case .frame(let message)? = next else { throw provedCode ? droppedAfterProof : refused }
                switch try joiner.receive(message) {
                case .send(let reply):
                    try await channel.writeAndFlush(ByteBuffer(bytes: try WireFrame.encode(reply)))
                    provedCode = true
                case .finished(let outcome, let last):
                    if let last { try await channel.writeAndFlush(ByteBuffer(bytes: try WireFrame.encode(last))) }
                    return outcome
                }
            }
            throw refused
        }
    }

    /// Why a connection to an inviter failed, in words (NIO's text nests the errno in
    /// "Connection errors: SingleConnectionFailure(…)").
    nonisolated static func connectFailure(_ error: any Error) -> String {
        let underlying = (error as? NIOConnectionError)?.connectionErrors.first?.error ?? error
        if let io = underlying as? IOError {
            switch io.errnoCode {
            case ECONNREFUSED: return "nothing is listening there (connection refused); check the address and port (`meshctl status` on the other device shows them)"
            case EHOSTUNREACH, ENETUNREACH: return "no route to that address; are both devices on the same network?"
            default: break
            }
        }
        if case ChannelError.connectTimeout = underlying {
            return "no answer within 3 s; check the address, and that a firewall lets TCP to that port through"
        }
        return "\(error)"
    }
}
