import MeshCore
import NIOCore
import NIOPosix

/// The joiner's side of one pairing exchange: open a stream path to the inviter (kind=2), send
/// `PairingJoiner`'s messages, read the inviter's, all under one deadline that closes the path.
/// Knows nothing of the node: its caller stores the outcome.
///
/// Errors are `MeshError` (unreachable, refused) or `PairingError` (a message that fails the
/// protocol); see docs/PAIRING.md.
struct PairingJoinExchange {
    /// The inviter's address.
    let endpoint: DaemonConfiguration.Endpoint
    /// The whole exchange's deadline, in seconds (the node's pairing attempt timeout).
    let timeout: Double
    /// The connect timeout.
    static let connectTimeout = TimeAmount.seconds(3)
    /// Inviter messages read at most before the exchange counts as refused.
    static let maximumMessages = 8

    /// Runs `joiner` against the inviter over `transport`; the outcome once the inviter's last
    /// message checked out.
    func run(_ joiner: PairingJoiner, over transport: any NodeTransport) async throws -> PairingOutcome {
        do {
            return try await transport.dialStream(to: .host(endpoint), kind: .pairing, timeout: Self.connectTimeout) { path, frames in
                try await exchange(joiner, on: path, frames: &frames)
            }
        } catch let error as PathConnectError {
            throw MeshError.unreachable(endpoint.description, Self.connectFailure(error.underlying ?? error))
        }
    }

    /// The messages of the exchange on an open `path`, under the exchange's deadline.
    private func exchange(_ joiner: PairingJoiner, on path: any ChannelPath, frames: inout PathFrames) async throws -> PairingOutcome {
        let deadline = path.eventLoop.scheduleTask(in: .nanoseconds(Nanoseconds.signed(seconds: timeout))) {
            path.close()
        }
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
        try await path.write(try WireFrame.encode(joiner.start()))
        var provedCode = false
        for _ in 0..<Self.maximumMessages {
            let next: WireFrame?
            do { next = try await frames.next() } catch { throw provedCode ? droppedAfterProof : refused }
            guard case .frame(let message)? = next else { throw provedCode ? droppedAfterProof : refused }
            switch try joiner.receive(message) {
            case .send(let reply):
                try await path.write(try WireFrame.encode(reply))
                provedCode = true
            case .finished(let outcome, let last):
                if let last { try await path.write(try WireFrame.encode(last)) }
                return outcome
            }
        }
        throw refused
    }

    /// Why a connection to an inviter failed, in words (NIO's text nests the errno in
    /// "Connection errors: SingleConnectionFailure(…)").
    static func connectFailure(_ error: any Error) -> String {
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
