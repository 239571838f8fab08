import MeshCore
import MeshLocalAPI

/// The one place where the daemon's errors become the local API's error bodies: each
/// `MeshError.Kind` gets its documented wire code (docs/LOCAL-API.md), and the message is sent
/// as it is. Below the local API nothing knows a wire code.
extension LocalAPIErrorBody {
    /// The body a client sees for `error`.
    public init(_ error: MeshError) {
        self.init(code: Self.code(of: error.kind), message: error.message)
    }

    /// The body a client sees for any error a request ended with. A `MeshError` maps by kind,
    /// a `LocalAPIErrorBody` is sent as it is,
    /// cancellation means the daemon is stopping; anything else is `internal`, its text not
    /// sent (it may carry details the client should not see; the log has it).
    public init(failure error: any Error) {
        switch error {
        case let error as MeshError:
            self.init(error)
        case let error as LocalAPIErrorBody:
            self = error
        case is CancellationError:
            self.init(code: Code.shuttingDown, message: "the request was cancelled because the daemon is shutting down")
        default:
            self.init(code: Code.internalError, message: "the daemon failed to perform the request; see its log")
        }
    }

    /// The wire code of `kind`.
    public static func code(of kind: MeshError.Kind) -> String {
        switch kind {
        case .invalidArgument: Code.invalidArgument
        case .unknownPeer: LocalAPIDataError.unknownPeer
        case .peerNotActive: LocalAPIDataError.peerNotActive
        case .notRunning: "not-running"
        case .stopping: "stopping"
        case .alreadyRan: "already-ran"
        case .pairingExpired: "pairing-expired"
        case .pairingCodeInvalidated: "pairing-code-invalidated"
        case .pairingCodeUsed: "pairing-code-used"
        case .pairingBusy: "pairing-busy"
        case .pairingReplaced: "pairing-replaced"
        case .pairingCancelled: "pairing-cancelled"
        case .pairingFailed: "pairing-failed"
        case .pairingRefused: "pairing-refused"
        case .invalidCode: "invalid-code"
        case .unreachable: "unreachable"
        case .alreadyPaired: "already-paired"
        case .discoveryOff: "discovery-off"
        case .inviterNotFound: "inviter-not-found"
        case .inviterAmbiguous: "inviter-ambiguous"
        case .queueFull: LocalAPIDataError.queueFull
        case .notFound: LocalAPIDataError.notFound
        case .sessionClosed: LocalAPIDataError.sessionClosed
        case .storeFailed: LocalAPIDataError.storeFailed
        case .deliveryUnavailable: LocalAPIDataError.deliveryUnavailable
        case .tooManyAttachments: LocalAPIDataError.tooManyAttachments
        case .featureNotAllowed: LocalAPIDataError.featureNotAllowed
        }
    }

    /// The client lacks the control role for `operation` (a local API rule: `control_allow`).
    public static func notPermitted(_ operation: String, uid: UInt32?) -> LocalAPIErrorBody {
        let who = uid.map { "uid \($0)" } ?? "a client whose uid is unknown"
        return LocalAPIErrorBody(code: Code.notPermitted,
                                 message: "not permitted: \(operation) changes the paired devices and \(who) may not; run it as root or the daemon's user, or add the uid or a group of it to control_allow in the daemon's config")
    }
}
