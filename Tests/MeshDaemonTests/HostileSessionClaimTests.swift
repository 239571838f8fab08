import Foundation
import MeshCore
import Testing
@testable import MeshDaemon

/// A hostile paired peer that is not a member of the victim's device set claims the victim's
/// session (0x10): every claim is refused, the session stays the victim's, and a claim whose
/// owner is not spelled as a device ID is dropped as malformed.
extension DeliveryIntegration.HostilePairedPeerTests {
    @Test func aHandOverClaimFromOutsideTheDeviceSetIsRefused() async throws {
        let log = CountingLogHandler()
        try await Self.withHostilePeer(log: log) { victim, hostile in
            let session = UUID(), victimID = victim.node.deviceID, hostileID = hostile.node.deviceID
            try await victim.router.announceSession(sessionID: session, featureID: Self.feature, owner: "victim", status: "running")
            let claim = DeliverySessionRecord(sessionID: session, featureID: Self.feature, owner: hostileID.description,
                                              status: "running", updatedAtMicros: 0, revision: 1 << 40)
            var messages: [(ChannelMessage, PingPath)] = (0..<50).map { _ in
                (.application(DeliveryMessage.sessionHandOver(owner: hostileID, record: claim).encode()), .stream)
            }
            // Naming the victim itself, and an owner in lower case (not the canonical spelling).
            messages.append((.application(DeliveryMessage.sessionHandOver(owner: victimID, record: claim).encode()), .stream))
            var lower = DeliveryMessage.sessionHandOver(owner: hostileID, record: claim).encode()
            for index in 3..<(3 + hostileID.description.utf8.count) where (0x41...0x5A).contains(lower[index]) { lower[index] |= 0x20 }
            messages.append((.application(lower), .stream))
            _ = try await Self.send(messages, from: hostile.node, to: victimID)
            try await waitUntil("claims handled", timeout: 10) {
                let counters = await victim.router.counterValues()
                return counters["delivery.sessions.handovers_received"] == 51 && counters["delivery.malformed"] == 1
            }
            let counters = await victim.router.counterValues()
            #expect(counters["delivery.sessions.handovers_refused"] == 50, "\(counters)")
            #expect(counters["delivery.sessions.handovers_stored"] == 0)
            let row = try #require(try await victim.router.sessions(featureID: Self.feature).first { $0.sessionID == session })
            #expect(row.sourcePeer == nil && row.owner == "victim" && row.revision == 1, "the session stays the victim's: \(row)")
            #expect(log.lines["refused a session hand-over: not from a member of the device set, or not a valid claim"] ?? 0 >= 1)
        }
    }
}
