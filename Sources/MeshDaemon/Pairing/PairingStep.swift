/// What the caller of ``PairingJoiner`` or ``PairingResponder`` does next.
public enum PairingStep: Sendable {
    /// Write this message, then wait for the peer's next one.
    case send([UInt8])
    /// Pairing is complete on this side: write the last message if there is one, then close.
    case finished(PairingOutcome, send: [UInt8]?)
}
