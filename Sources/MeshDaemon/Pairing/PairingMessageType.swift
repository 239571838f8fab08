/// Message type, the second byte of every pairing message.
enum PairingMessageType: UInt8, Sendable, CustomStringConvertible {
    case hello = 1
    case inviterConfirmation = 2
    case joinerConfirmation = 3
    case inviterIdentity = 4

    var description: String {
        switch self {
        case .hello: return "message 1 (hello)"
        case .inviterConfirmation: return "message 2 (inviter confirmation)"
        case .joinerConfirmation: return "message 3 (joiner confirmation)"
        case .inviterIdentity: return "message 4 (inviter identity)"
        }
    }
}
