/// One local uid's share of this device's session rows (`uid_max_sessions`) and timer anchors
/// (`uid_max_anchors`): a uid whose apps announce or close ever new sessions, or set anchors of
/// them, fills its share and is refused, while other uids' and the daemon's writes still fit.
/// Only a new row counts: a newer revision of a row that exists never does.
extension StoreSessions {
    /// What a share bounds: the rows of `session_directory` or of `timer_anchor`.
    enum UIDShare {
        case sessions, anchors
    }

    /// Throws `.full` naming the share when `uid` already holds all the rows of `share` it may.
    func checkShare(_ share: UIDShare, of uid: UInt32, operation: String) throws {
        let options = store.options    // plain integers: a copy costs nothing
        let (held, maximum, limit): (Int, Int, StoreLimit) = switch share {
        case .sessions: (store.tallies.sessionsByUID[uid] ?? 0, options.maxSessionsPerUID, .sessionsPerUID(options.maxSessionsPerUID))
        case .anchors: (store.tallies.anchorsByUID[uid] ?? 0, options.maxAnchorsPerUID, .anchorsPerUID(options.maxAnchorsPerUID))
        }
        guard held >= maximum else { return }
        throw StoreError(code: .full, operation: operation, path: store.path, limit: limit,
                         detail: "uid \(uid) holds its share of this device's "
                             + (share == .sessions ? "session rows (\(held) rows)" : "timer anchors (\(held) anchors)"))
    }

    /// Counts `delta` rows of `share` toward `uid` (nil: rows of no uid, not counted).
    func addToShare(_ share: UIDShare, uid: UInt32?, _ delta: Int) {
        switch share {
        case .sessions: StoreTallies.add(delta, uid: uid, to: &store.tallies.sessionsByUID)
        case .anchors: StoreTallies.add(delta, uid: uid, to: &store.tallies.anchorsByUID)
        }
    }
}
