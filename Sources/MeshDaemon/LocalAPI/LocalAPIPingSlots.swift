import MeshCore

/// How many `ping` requests each uid has running at once, capped: a ping sends up to 10 000
/// probes to a paired device and holds them for its round trips, so a local user looping on it
/// would otherwise make the daemon flood its peers and hold that state for every request.
///
/// Shared by every connection (they may live on different loops), hence the lock.
final class LocalAPIPingSlots: Sendable {
    /// `ping` requests one uid may have running at once.
    let maximumPerUID: Int
    private let running = Locked<[UInt32: Int]>([:])

    /// Slots for `maximumPerUID` pings per uid (at least one).
    init(maximumPerUID: Int) { self.maximumPerUID = max(1, maximumPerUID) }

    /// Takes a slot for `uid`; false when it has its maximum running (nothing taken).
    func take(uid: UInt32) -> Bool {
        running.withLock { running in
            let now = running[uid, default: 0]
            guard now < maximumPerUID else { return false }
            running[uid] = now + 1
            return true
        }
    }

    /// Gives back a slot `take` gave `uid`.
    func giveBack(uid: UInt32) {
        running.withLock { running in
            let now = running[uid, default: 0]
            if now <= 1 { running[uid] = nil } else { running[uid] = now - 1 }
        }
    }

    /// Pings of `uid` running now.
    func count(uid: UInt32) -> Int { running.withLock { $0[uid, default: 0] } }
}
