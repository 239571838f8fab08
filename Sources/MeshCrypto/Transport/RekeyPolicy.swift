/// When a channel must get fresh keys: WireGuard's timers and message limits.
///
/// The daemon asks ``action(keyAge:messagesSent:isInitiator:)`` before sending; time is passed
/// in (the key's age on an injected clock), never read here.
public struct RekeyPolicy: Sendable, Equatable {
    /// What the caller should do with the current keys.
    public enum Action: Sendable, Equatable {
        /// Keep using the keys.
        case keep
        /// Start a new handshake now; the current keys stay usable until it completes.
        case rekey
        /// Stop using the keys: neither send nor accept with them.
        case reject
    }

    /// Start a new handshake when the keys are this old (WireGuard `REKEY_AFTER_TIME`, 120 s).
    public var rekeyAfterTime: Duration = .seconds(120)
    /// Never use keys older than this (WireGuard `REJECT_AFTER_TIME`, 180 s).
    public var rejectAfterTime: Duration = .seconds(180)
    /// Start a new handshake after this many messages (WireGuard `REKEY_AFTER_MESSAGES`, 2⁶⁰).
    public var rekeyAfterMessages: UInt64 = 1 << 60
    /// Hard limit on messages per key (WireGuard `REJECT_AFTER_MESSAGES`, 2⁶⁴ − 2¹³ − 1); the
    /// sealers refuse to go past it.
    public var rejectAfterMessages: UInt64 = UInt64.max - (1 << 13)

    /// WireGuard's values.
    public static let wireGuard = RekeyPolicy()

    /// Creates the WireGuard policy; change fields for tests.
    public init() {}

    /// The action for keys of age `keyAge` that have sent `messagesSent` messages.
    public func action(keyAge: Duration, messagesSent: UInt64) -> Action {
        if keyAge >= rejectAfterTime || messagesSent >= rejectAfterMessages { return .reject }
        if keyAge >= rekeyAfterTime || messagesSent >= rekeyAfterMessages { return .rekey }
        return .keep
    }
}
