import MeshCrypto
import MeshDiscovery
import MeshLocalAPI

/// Pairing by code alone (`meshctl pair CODE` without `--address`): the inviter advertises its
/// code's public hint (`pair=7K`, the code's first two characters, which carry no secret); the
/// joiner looks for that hint over mDNS and pairs with the match. Devices with another hint are
/// never contacted, so they learn nothing; see docs/PAIRING.md, "Pairing without an address".
extension MeshNode {
    /// How long the joiner looks for an inviter advertising the hint, in seconds.
    static let inviterSearchSeconds: Double = 5

    /// Finds the inviter advertising `code.publicHint` and pairs with it. With several matches
    /// (two live codes with the same first two characters) each is tried in turn; a wrong one
    /// costs that inviter one failed attempt and learns nothing about `code`.
    func joinPairingByDiscovery(_ code: PairingCode) async throws -> PairedDevice {
        // meshd always has a discovery (static peers at least); with mdns off nothing would
        // ever show the hint, so say so at once instead of "searching" 5 s.
        guard discovery != nil, configuration.mdns else {
            throw ControlError(code: "discovery-off",
                               message: "this daemon runs without discovery (mdns = false or --no-mdns); pass --address HOST:PORT of the device that shows the code")
        }
        let inviters = try await findInviters(hint: code.publicHint)
        var lastError: (any Error)?
        for inviter in inviters {
            for endpoint in DiscoveredPeerTable.endpoints(of: inviter) {
                do {
                    let device = try await joinPairing(code, at: endpoint)
                    logger.info("paired by code over mDNS", metadata: ["service.name": "\(inviter.instanceName)",
                                                                      "address": "\(endpoint)"])
                    return device
                } catch let error as ControlError where error.code == "unreachable" {
                    lastError = error   // try the inviter's next address
                } catch {
                    lastError = error   // wrong inviter (same hint by chance) or refused: next one
                    break
                }
            }
        }
        throw lastError ?? Self.noInviter(hint: code.publicHint, reason: nil)
    }

    /// Services advertising `hint`, awaited (polling the table) up to `inviterSearchSeconds`.
    func findInviters(hint: String) async throws -> [DiscoveredService] {
        let started = clock.monotonicNanoseconds()
        let limit = UInt64(Self.inviterSearchSeconds * 1e9)
        for _ in 0..<Int(Self.inviterSearchSeconds * 20) + 1 {
            let found = discovered.inviters(hint: hint)
            if !found.isEmpty { return found }
            guard clock.monotonicNanoseconds() &- started < limit, phase == .running else { break }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        throw Self.noInviter(hint: hint, reason: discovered.mdnsAvailable == false ? discovered.unavailableReason : nil)
    }

    private static func noInviter(hint: String, reason: DiscoveryUnavailableReason?) -> ControlError {
        if let reason {
            return ControlError(code: "inviter-not-found",
                                message: "cannot look for the inviting device: mDNS is not available (\(reason.message)); pass --address HOST:PORT of the device that shows the code")
        }
        return ControlError(code: "inviter-not-found",
                            message: "no device on this network shows a pairing code starting with \(hint) (searched \(Int(inviterSearchSeconds)) s over mDNS); check that the code is still shown and both devices are on the same network, or pass --address HOST:PORT")
    }
}
