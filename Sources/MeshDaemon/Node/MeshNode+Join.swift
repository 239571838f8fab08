import MeshCrypto
import MeshLocalAPI
import NIOCore
import NIOPosix

/// The joiner's side of pairing: connect to the inviter's address, run the exchange, store
/// the inviter, then connect the channel at once.
extension MeshNode {
    /// Pairs with the daemon that shows `code`: at `address` (`HOST:PORT`), or, when `address`
    /// is nil, the one discovery finds advertising the code's public hint (see
    /// `joinPairingByDiscovery`).
    public func joinPairing(code: String, address: String?) async throws -> PairedDevice {
        let parsed: PairingCode
        do {
            parsed = try PairingCode.parse(code)
        } catch {
            throw ControlError.invalidCode("\(error)")
        }
        var endpoint: DaemonConfiguration.Endpoint?
        if let address {
            guard let given = EndpointParser.parse(address) else {
                // The config parser's words say what is wrong (no port, port out of range, …).
                var detail = "'\(address)' is not HOST:PORT"
                do { _ = try DaemonConfiguration.Endpoint(parsing: address) } catch { detail = error.message }
                throw ControlError.invalidArgument("--address: \(detail)")
            }
            endpoint = given
        }
        guard phase == .running else {
            throw ControlError(code: "not-running", message: "the daemon is not running its network service")
        }
        guard let endpoint else { return try await joinPairingByDiscovery(parsed) }
        return try await joinPairing(parsed, at: endpoint)
    }

    /// Runs pairing with the daemon at `endpoint`, stores it and dials it. Throws
    /// `ControlError` (wrong code, refused, unreachable, that is this daemon).
    func joinPairing(_ parsed: PairingCode, at endpoint: DaemonConfiguration.Endpoint) async throws -> PairedDevice {
        let joiner = try PairingJoiner(code: parsed, identity: PairingIdentity(publicKey: identity.keyPair.publicKey,
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
            throw ControlError.invalidArgument("that address is this daemon itself")
        }
        let device = storePairing(outcome, address: PeerAddress(address: endpoint.description, source: .pairing))
        scheduleDial(outcome.peerDeviceID, immediately: true)
        return device
    }

    /// Runs the joiner's messages over a kind=2 connection; throws `ControlError` or
    /// `PairingError`.
    nonisolated func exchangePairing(_ joiner: PairingJoiner,
                                     with endpoint: DaemonConfiguration.Endpoint) async throws -> PairingOutcome {
        let connection: WireConnection
        do {
            connection = try await connectWire(to: endpoint, timeout: .seconds(3))
        } catch {
            throw ControlError.unreachable(endpoint.description, Self.connectFailure(error))
        }
        let channel = connection.channel
        let timeout = TimeAmount.nanoseconds(Nanoseconds.signed(seconds: tuning.pairingAttemptTimeout))
        let deadline = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        defer { deadline.cancel() }
        var joiner = joiner
        let refused = ControlError(
            code: "pairing-refused",
            message: "the daemon at \(endpoint) ended the pairing without completing it: the code is wrong, "
                + "expired, already used, or was invalidated after too many failed attempts; create a new code")
        return try await connection.executeThenClose { inbound, _ in
            var frames = inbound.makeAsyncIterator()
            try await channel.writeAndFlush(ByteBuffer(bytes: ConnectionKind.pairing.preamble + (try WireFrame.encode(joiner.start()))))
            for _ in 0..<8 {
                let next: WireFrame?
                do { next = try await frames.next() } catch { throw refused }
                guard case .frame(let message)? = next else { throw refused }
                switch try joiner.receive(message) {
                case .send(let reply):
                    try await channel.writeAndFlush(ByteBuffer(bytes: try WireFrame.encode(reply)))
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
