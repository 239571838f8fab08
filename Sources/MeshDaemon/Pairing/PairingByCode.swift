import Logging
import MeshCore
import MeshDiscovery

/// Pairing by code alone (`meshctl pair CODE` without `--address`): the inviter advertises its
/// code's public hint (`pair=7K`, the code's first two characters, which carry no secret); the
/// joiner looks for that hint over mDNS and pairs with the match. Devices with another hint are
/// never contacted, so they learn nothing; see docs/PAIRING.md, "Pairing without an address".
enum PairingByCode {
    /// How long the joiner looks for an inviter advertising the hint, in seconds.
    static let searchSeconds: Double = 5

    /// Inviters (services advertising the code's hint) tried before the joiner asks for
    /// `--address`. The hint is public, so anyone on the LAN can advertise it; each service
    /// tried gives whoever runs it one online guess at the code, so N fake services must not
    /// buy N guesses.
    static let maximumInvitersTried = 2

    /// Pairs with one of `inviters` (services advertising `hint`) through `join`. With several
    /// matches (two live codes with the same first two characters, or copies of the hint) at
    /// most ``maximumInvitersTried`` are tried in turn; a wrong one costs that inviter one
    /// failed attempt and learns nothing about the code. When they fail and more services
    /// carry the hint, the error lists them and asks for `--address`.
    static func pair(with inviters: [DiscoveredService], hint: String, logger: Logger,
                     isolation: isolated (any Actor)? = #isolation,
                     join: (DaemonConfiguration.Endpoint) async throws -> PairedDevice) async throws -> PairedDevice {
        var lastError: (any Error)?
        for inviter in inviters.prefix(maximumInvitersTried) {
            for endpoint in DiscoveredPeerTable.endpoints(of: inviter) {
                do {
                    let device = try await join(endpoint)
                    logger.info("paired by code over mDNS", metadata: ["service.name": "\(inviter.instanceName)",
                                                                      "address": "\(endpoint)"])
                    return device
                } catch let error as MeshError where error.kind == .unreachable {
                    lastError = error   // try the inviter's next address
                } catch let error as MeshError where error.kind == .alreadyPaired {
                    throw error         // the right inviter: nothing to gain from the next one
                } catch {
                    lastError = error   // wrong inviter (same hint by chance) or refused: next one
                    break
                }
            }
        }
        if inviters.count > 1 { throw ambiguousInviters(inviters, hint: hint, lastError: lastError) }
        throw lastError ?? noInviter(hint: hint, reason: nil)
    }

    /// The error after the tried inviters failed while several services carry the hint: names
    /// them (addresses, and instance names made safe to print: they come from the network).
    static func ambiguousInviters(_ inviters: [DiscoveredService], hint: String, lastError: (any Error)?) -> MeshError {
        let shown = 8
        var lines = inviters.prefix(shown).map { service -> String in
            let addresses = DiscoveredPeerTable.endpoints(of: service).prefix(3).map(\.description).joined(separator: ", ")
            return "\(printableServiceName(service.instanceName)) at \(addresses.isEmpty ? "no address" : addresses)"
        }
        if inviters.count > shown { lines.append("and \(inviters.count - shown) more") }
        let tried = min(inviters.count, maximumInvitersTried)
        let why = (lastError as? MeshError)?.message ?? lastError.map { "\($0)" } ?? "no answer"
        return MeshError(.inviterAmbiguous,
                         "\(inviters.count) services on this network show a pairing code starting with \(hint); "
                            + "the first \(tried) did not pair (last: \(why)). Each one tried could guess at the code, so no more are tried: "
                            + "pass --address HOST:PORT of the device that shows the code. Candidates: "
                            + lines.joined(separator: "; "))
    }

    /// An mDNS instance name as one printable line of at most 64 characters: control, line
    /// separator and bidirectional characters become "?".
    static func printableServiceName(_ name: String) -> String {
        var out = ""
        for scalar in name.unicodeScalars.prefix(64) {
            let forbidden = PairingIdentity.problem(withName: String(scalar)) != nil
            out.unicodeScalars.append(forbidden ? "?" : scalar)
        }
        return "\"" + out + "\""
    }

    /// No service shows `hint` (`reason`: mDNS is not available at all).
    static func noInviter(hint: String, reason: DiscoveryUnavailableReason?) -> MeshError {
        if let reason {
            return MeshError(.inviterNotFound, "cannot look for the inviting device: mDNS is not available (\(reason.message)); pass --address HOST:PORT of the device that shows the code")
        }
        return MeshError(.inviterNotFound, "no device on this network shows a pairing code starting with \(hint) (searched \(Int(searchSeconds)) s over mDNS); check that the code is still shown and both devices are on the same network, or pass --address HOST:PORT")
    }
}
