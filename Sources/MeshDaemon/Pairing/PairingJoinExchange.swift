import MeshCore
import NIOCore
import NIOPosix

/// The joiner's side of one pairing exchange: connect to the inviter (kind=2), send the
/// preamble and `PairingJoiner`'s messages, read the inviter's, all under one deadline that
/// closes the connection. Knows nothing of the node: its caller stores the outcome.
///
/// Errors are `MeshError` (unreachable, refused) or `PairingError` (a message that fails the
/// protocol); see docs/PAIRING.md.
struct PairingJoinExchange {
    /// Opens a connection to the inviter within a connect timeout.
    typealias Connect = @Sendable (DaemonConfiguration.Endpoint, TimeAmount) async throws -> WireConnection

    /// The inviter's address.
    let endpoint: DaemonConfiguration.Endpoint
    /// The whole exchange's deadline, in seconds (the node's pairing attempt timeout).
    let timeout: Double
    /// The connect timeout.
    static let connectTimeout = TimeAmount.seconds(3)
    /// Inviter messages read at most before the exchange counts as refused.
    static let maximumMessages = 8

    /// Runs `joiner` against the inviter; the outcome once the inviter's last message checked out.
    func run(_ joiner: PairingJoiner, connect: Connect) async throws -> PairingOutcome {
        let connection: WireConnection
        do {
            connection = try await connect(endpoint, Self.connectTimeout)
        } catch {
            throw MeshError.unreachable(endpoint.description, Self.connectFailure(error))
        }
        let channel = connection.channel
        let deadline = channel.eventLoop.scheduleTask(in: .nanoseconds(Nanoseconds.signed(seconds: timeout))) {
            channel.close(promise: nil)
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
        return try await connection.executeThenClose { inbound, _ in
            var frames = inbound.makeAsyncIterator()
            try await channel.writeAndFlush(ByteBuffer(bytes: ConnectionKind.pairing.preamble + (try WireFrame.encode(joiner.start()))))
            var provedCode = false
            for _ in 0..<Self.maximumMessages {
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
