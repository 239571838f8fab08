import MeshCore
import NIOCore
import NIOPosix
import Synchronization

/// The joiner's side of one pairing exchange: open a stream path to the inviter (kind=2), send
/// `PairingJoiner`'s messages, read the inviter's, all under one deadline that closes the path.
/// Knows nothing of the node: its caller stores the outcome.
///
/// Errors are `MeshError` (unreachable, refused) or `PairingError` (a message that fails the
/// protocol); see docs/PAIRING.md.
struct PairingJoinExchange {
    /// Where the inviter is: an address, or a rendezvous on the relay broker.
    let target: PathAddress
    /// The whole exchange's deadline, in seconds (the node's pairing attempt timeout).
    let timeout: Double

    /// The exchange with the daemon at `endpoint`.
    init(endpoint: DaemonConfiguration.Endpoint, timeout: Double) {
        target = .host(endpoint)
        self.timeout = timeout
    }

    /// The exchange with whoever shows the code on the relay broker's rendezvous `relay`.
    init(relay: RelayAddress, timeout: Double) {
        target = .relay(relay)
        self.timeout = timeout
    }

    /// The inviter in words: "the daemon at HOST:PORT", "the device on the relay broker HOST".
    var inviter: String {
        target.isRelay ? "the device on the relay broker \(target.host)" : "the daemon at \(target)"
    }
    /// The connect timeout.
    static let connectTimeout = TimeAmount.seconds(3)
    /// Inviter messages read at most before the exchange counts as refused.
    static let maximumMessages = 8

    /// Runs `joiner` against the inviter over `transport`; the outcome once the inviter's last
    /// message checked out.
    func run(_ joiner: PairingJoiner, over transport: any NodeTransport) async throws -> PairingOutcome {
        do {
            return try await transport.dialStream(to: target, kind: .pairing, timeout: Self.connectTimeout) { path, frames in
                try await exchange(joiner, on: path, frames: &frames)
            }
        } catch let error as PathConnectError {
            if target.isRelay { throw MeshError.unreachable(target.description, error.reason) }
            throw MeshError.unreachable(target.description, Self.connectFailure(error.underlying ?? error))
        }
    }

    /// The messages of the exchange on an open `path`, under the exchange's deadline.
    private func exchange(_ joiner: PairingJoiner, on path: any ChannelPath, frames: inout PathFrames) async throws -> PairingOutcome {
        let timedOut = DeadlineFlag()
        let deadline = path.eventLoop.scheduleTask(in: .nanoseconds(Nanoseconds.signed(seconds: timeout))) {
            timedOut.fire()
            path.close()
        }
        defer { deadline.cancel() }
        var joiner = joiner
        let refused = MeshError(
            .pairingRefused,
            "\(inviter) ended the pairing without completing it: the code is wrong, "
                + "expired, already used, or was invalidated after too many failed attempts; create a new code")
        // After message 3 the inviter knows this device proved the code: what is left is its
        // own decision (another device used the code first, or this one is already paired there).
        let droppedAfterProof = MeshError(
            .pairingRefused,
            "\(inviter) checked the code and then ended the pairing: another device used the code "
                + "first, or that daemon is already paired with this one and created its code without --replace "
                + "(it says so there); create a new code")
        // On the broker a hello reaches every inviter of the hint or none: silence until the
        // deadline means nobody shows the code there.
        let nobodyAnswered = MeshError(
            .inviterNotFound,
            "no device answered on the relay broker \(target.host) within \(Int(timeout)) s")
        try await path.write(try WireFrame.encode(joiner.start()))
        var provedCode = false
        var answered = false
        func ended() -> MeshError {
            if provedCode { return droppedAfterProof }
            if target.isRelay, !answered, timedOut.fired { return nobodyAnswered }
            return refused
        }
        for _ in 0..<Self.maximumMessages {
            let next: WireFrame?
            do { next = try await frames.next() } catch { throw ended() }
            guard case .frame(let message)? = next else { throw ended() }
            answered = true
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

/// Whether the exchange's deadline fired (set on the path's loop, read by the exchange's task).
private final class DeadlineFlag: Sendable {
    private let state = Mutex(false)
    func fire() { state.withLock { $0 = true } }
    var fired: Bool { state.withLock { $0 } }
}
