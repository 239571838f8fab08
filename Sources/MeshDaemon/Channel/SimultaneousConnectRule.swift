/// Decides which of two competing connections (or rekeys) between the same two daemons
/// survives, so exactly one channel is left and both sides agree without talking.
///
/// The *preferred initiator* of a pair is the side whose static public key is smaller
/// (byte-wise). A connection initiated by the preferred side beats one initiated by the other
/// side; between two connections initiated by the same side the newer one wins (that side
/// lost its old one: it restarted or its connection died).
///
/// Both sides evaluate the same rule on the same facts, so in a simultaneous connect one side
/// refuses the other's attempt and the other abandons its own.
enum SimultaneousConnectRule {
    /// Whether this side is the preferred initiator of the pair.
    static func localSideIsPreferred(localKey: [UInt8], peerKey: [UInt8]) -> Bool {
        localKey.lexicographicallyPrecedes(peerKey)
    }

    /// Whether a new connection initiated by `candidateIsLocal` side should replace the
    /// existing channel or in-flight attempt initiated by `existingIsLocal` side.
    static func candidateWins(candidateIsLocal: Bool, existingIsLocal: Bool, localKey: [UInt8], peerKey: [UInt8]) -> Bool {
        let localPreferred = localSideIsPreferred(localKey: localKey, peerKey: peerKey)
        let candidatePreferred = candidateIsLocal == localPreferred
        let existingPreferred = existingIsLocal == localPreferred
        return candidatePreferred || !existingPreferred
    }
}
