import Logging
import NIOCore

/// What the inviter's exchange asks of the node that owns the live code (`MeshNode`).
protocol PairingAttemptHost: Sendable {
    /// A connection's first message was not a well-formed hello (it costs the code nothing).
    func pairingHelloMalformed() async
    /// Starts a responder when the live code accepts an attempt; nil closes the connection.
    func beginPairingAttempt(_ admission: InboundAdmission) async -> PairingResponder?
    /// A reply went out: arm the per-message deadline.
    func rearmPairingDeadline(_ admission: InboundAdmission) async
    /// The joiner proved the code and sent its identity: store it; false when the attempt may
    /// not end in a pairing (nothing more is sent).
    func pairingSucceeded(_ outcome: PairingOutcome, attempt: PairingAttemptID, admission: InboundAdmission) async -> Bool
    /// The attempt ended without a pairing; `reachedExchange`: message 2 (the inviter's CPace
    /// share and confirmation) went out, so the joiner's guess was tested.
    func pairingAttemptFailed(_ attempt: PairingAttemptID, reachedExchange: Bool) async
}

/// The inviter's side of one pairing exchange on an accepted kind=2 connection: checks the
/// hello, then moves `PairingResponder`'s messages until it finishes, the joiner stops, or a
/// deadline closes the connection. The code's bookkeeping stays with the host.
///
/// The attempt counts against the code only once the first message is a well-formed hello
/// (`PairingResponder.checkHello`): a connection that sends nothing, closes, or sends garbage
/// is closed in silence and costs the code nothing (the connection's admission deadline bounds
/// how long it may take).
struct PairingInviterExchange<Host: PairingAttemptHost> {
    let host: Host
    let logger: Logger

    func serve(_ admission: InboundAdmission,
               frames: inout PathFrames) async throws {
        guard case .frame(let hello)? = try await frames.next() else { return }
        do {
            try PairingResponder.checkHello(hello)
        } catch {
            await host.pairingHelloMalformed()
            logger.debug("closed a pairing connection whose first message is not a hello", metadata: ["error": "\(error)"])
            return
        }
        guard var responder = await host.beginPairingAttempt(admission) else { return }
        let attempt = responder.attempt
        var succeeded = false
        var reachedExchange = false
        do {
            var next = hello
            exchange: while true {
                switch try responder.receive(next) {
                case .send(let reply):
                    reachedExchange = true
                    try await admission.path.write(try WireFrame.encode(reply))
                    await host.rearmPairingDeadline(admission)
                    guard case .frame(let message)? = try await frames.next() else { break exchange }
                    next = message
                case .finished(let outcome, let last):
                    guard await host.pairingSucceeded(outcome, attempt: attempt, admission: admission) else { break exchange }
                    succeeded = true
                    if let last { try await admission.path.write(try WireFrame.encode(last)) }
                    break exchange
                }
            }
        } catch {
            logger.debug("pairing attempt failed", metadata: ["error": "\(error)"])
        }
        if !succeeded { await host.pairingAttemptFailed(attempt, reachedExchange: reachedExchange) }
    }
}
