import MeshLocalAPI
import NIOCore

extension LocalAPIDispatcher {
    /// `ping` pings of one uid may run at once unless told otherwise.
    public static let defaultMaximumPingsPerUID = 4

    /// Whether the client may ping: it holds the control role, or a feature right (any entry of
    /// `feature_allow` for its uid; without a list every known uid has every feature).
    func mayPing(_ credentials: PeerCredentials?) -> Bool {
        guard let credentials else { return false }
        if controlRole.holdsRole(credentials) { return true }
        guard let featureAllowList else { return true }
        return featureAllowList.allowsSomeFeature(uid: credentials.uid)
    }

    /// Performs a `ping` within the caller's role and its uid's slots (`LocalAPIPingSlots`).
    func ping(deviceID: String, count: Int, credentials: PeerCredentials?) async throws -> ByteBuffer {
        guard mayPing(credentials) else { throw LocalAPIErrorBody.pingNotPermitted(uid: credentials?.uid) }
        let uid = credentials?.uid ?? LocalAPIUIDBudget.unknownUID
        guard pingSlots.take(uid: uid) else {
            counters?.add(.pingsRefused)
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.tooManyPings,
                                    message: "uid \(uid) already has \(pingSlots.maximumPerUID) ping requests running; wait for one to finish and retry")
        }
        defer { pingSlots.giveBack(uid: uid) }
        return try LocalAPIJSON.encode(try await controlPlane.ping(deviceID: deviceID, count: count))
    }
}

extension LocalAPIErrorBody {
    /// `not-permitted` for a `ping` by a uid with neither the control role nor a feature right.
    static func pingNotPermitted(uid: UInt32?) -> LocalAPIErrorBody {
        let who = uid.map { "uid \($0)" } ?? "a client whose uid is unknown"
        return LocalAPIErrorBody(code: Code.notPermitted,
                                 message: "not permitted: ping probes the paired devices and \(who) may not; run it as root or the daemon's user, add the uid to control_allow, or give it a feature in feature_allow in the daemon's config")
    }
}
