/// What one timer pass decided for a peer with an active channel, in the order to perform.
enum PeerTimerAction: Equatable, Sendable {
    /// No authenticated packet within the reachability lease: close the channel and redial.
    case leaseExpired
    /// Send a keepalive request on the datagram path.
    case keepaliveDatagram
    /// The lease is about to run out: ask over the stream path too (datagrams may be filtered
    /// where TCP passes, so a UDP-less network keeps a slower channel).
    case keepaliveStream
    /// Start a rekey (the keys are due for one).
    case startRekey
    /// The keys passed the reject-after limit: close the channel and redial.
    case keysExpired
}

extension PeerRuntime {
    /// One timer pass at monotonic `now` with keepalives every `keepaliveInterval` ns: the
    /// actions due, in order (none without an active channel). Advances the keepalive schedule
    /// and the channel's key timers.
    mutating func timerTick(now: UInt64, keepaliveInterval: UInt64) -> [PeerTimerAction] {
        guard channel != nil else { return [] }
        guard lease.isValid(now: now) else { return [.leaseExpired] }
        var actions: [PeerTimerAction] = []
        if now >= nextKeepaliveAt {
            nextKeepaliveAt = now &+ keepaliveInterval
            actions.append(.keepaliveDatagram)
            let (twice, overflow) = keepaliveInterval.multipliedReportingOverflow(by: 2)
            if let expiry = lease.expiresAt, expiry > now, expiry - now < (overflow ? .max : twice) {
                actions.append(.keepaliveStream)
            }
        }
        switch channel?.tick(now: now) ?? RekeyTimer.Action.none {
        case .startRekey: actions.append(.startRekey)
        case .closeExpired: actions.append(.keysExpired)
        case .none: break
        }
        return actions
    }
}
