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

    /// Inviters (services advertising the code's hint) that may test a guess before the joiner
    /// asks for `--address`. The hint is public, so anyone on the LAN can advertise it; each
    /// service that answers the hello with a CPace share gets one online guess at the code, so
    /// N fake services must not buy N guesses.
    static let maximumInvitersTried = 2

    /// Services contacted at most, counting those that never answered with a share (they
    /// refused, closed, timed out or were unreachable, and learned nothing).
    static let maximumInvitersContacted = 8

    /// Pairs with one of the services advertising `hint` through `join`. `candidates` gives
    /// the services not in its argument (those tried already), waiting for discovery to show
    /// one while the search lasts; empty when there is none. They are tried in random order
    /// (`random`), so advertisers whose names sort first gain nothing. A service counts against
    /// ``maximumInvitersTried`` only when the exchange reached the CPace exchange (its
    /// message 2 came and the code did not match): one that refuses, closes, never answers or
    /// is unreachable cost no guess and does not stop the joiner from trying the next one, up to
    /// ``maximumInvitersContacted``. When they fail and more services carry the hint, the error
    /// lists them and asks for `--address`.
    static func pair<Random: RandomNumberGenerator>(
        hint: String, logger: Logger, random: Random,
        isolation: isolated (any Actor)? = #isolation,
        candidates: (Set<String>) async throws -> [DiscoveredService],
        join: (DaemonConfiguration.Endpoint) async throws -> PairedDevice) async throws -> PairedDevice {
        var random = random
        var lastError: (any Error)?
        var tried: Set<String> = []
        var seen: [String: DiscoveredService] = [:]
        var guessed = 0
        while guessed < maximumInvitersTried, tried.count < maximumInvitersContacted {
            let fresh = try await candidates(tried).filter { !tried.contains($0.instanceName) }
            for service in fresh { seen[service.instanceName] = service }
            guard let inviter = fresh.randomElement(using: &random) else { break }
            tried.insert(inviter.instanceName)
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
                    lastError = error   // wrong inviter (same hint by chance), fake, or refused: next one
                    if testedGuess(error) { guessed += 1 }
                    break
                }
            }
        }
        let services = seen.keys.sorted().compactMap { seen[$0] }
        if services.count > 1 { throw ambiguousInviters(services, hint: hint, tried: tried.count, lastError: lastError) }
        throw lastError ?? noInviter(hint: hint, reason: nil)
    }

    /// Whether a failed exchange let the inviter test a guess: its message 2 (a CPace share and
    /// confirmation) arrived and did not verify, or was not well formed (`pairing-failed`).
    /// A refusal (closed before message 2), a timeout or an unreachable address did not.
    static func testedGuess(_ error: any Error) -> Bool {
        (error as? MeshError)?.kind == .pairingFailed
    }

    /// The error after the tried inviters failed while several services carry the hint: names
    /// them (addresses, and instance names made safe to print: they come from the network).
    static func ambiguousInviters(_ inviters: [DiscoveredService], hint: String, tried: Int, lastError: (any Error)?) -> MeshError {
        let shown = 8
        var lines = inviters.prefix(shown).map { service -> String in
            let addresses = DiscoveredPeerTable.endpoints(of: service).prefix(3).map(\.description).joined(separator: ", ")
            return "\(printableServiceName(service.instanceName)) at \(addresses.isEmpty ? "no address" : addresses)"
        }
        if inviters.count > shown { lines.append("and \(inviters.count - shown) more") }
        let why = (lastError as? MeshError)?.message ?? lastError.map { "\($0)" } ?? "no answer"
        return MeshError(.inviterAmbiguous,
                         "\(inviters.count) services on this network show a pairing code starting with \(hint); "
                            + "the \(tried) tried did not pair (last: \(why)). Each one that answers could guess at the code, so no more are tried: "
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

    /// Whether the broker is worth trying after the LAN search failed with `error`: nothing was
    /// found, or what was found could not be reached. Not after an inviter refused or tested a
    /// guess (the code reached one; the broker would be a further guess).
    static func fallsBackToRelay(_ error: MeshError) -> Bool {
        error.kind == .inviterNotFound || error.kind == .unreachable
    }

    /// No inviter answered on the relay broker `broker` either (`relayError`: why, in the
    /// broker's words; `before`: why the direct ways failed).
    static func noInviterOnRelay(hint: String, broker: String, relayError: MeshError, before: MeshError?) -> MeshError {
        let relay = relayError.kind == .unreachable
            ? "the relay broker \(broker) could not be used (\(relayError.message))"
            : "no device answered on the relay broker \(broker) within \(Int(relayAnswerSeconds)) s"
        let direct: String
        switch before?.kind {
        case nil: direct = "mDNS is off on this daemon"
        case .inviterNotFound?: direct = "none on this network over mDNS (searched \(Int(searchSeconds)) s)"
        default: direct = before.map { "the direct way failed: \($0.message)" } ?? ""
        }
        return MeshError(.inviterNotFound, "no device shows a pairing code starting with \(hint): \(direct); \(relay). "
                            + "Check that the code is still shown and that both devices use the same relay broker, or pass --address HOST:PORT")
    }

    /// How long the joiner waits for an inviter to answer on the relay broker, in seconds (the
    /// pairing attempt's deadline).
    static let relayAnswerSeconds: Double = 10
}
