import ArgumentParser
import Foundation
import MeshLocalAPI
import SessionMeshClient

/// `meshctl pair`: show a code and wait for a device, or `meshctl pair - [--address HOST:PORT]`
/// to join the device that shows the code typed at the prompt (found over mDNS when no address
/// is given).
struct PairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Pair with another device by code.",
        discussion: """
            Without CODE: asks the daemon for a code, prints it and waits (with a countdown on a terminal) \
            until a device pairs or the code expires. Ctrl-C cancels the code and exits 130.
            With CODE: pairs with the device that shows the code. Give CODE as `-` to type the code at a prompt \
            (or pipe it in on standard input); a code given as an argument works but other local users can read \
            it in the process list, so meshctl warns. Without --address the daemon finds the device over mDNS \
            (the code's first two characters are announced by the other device while the code is live; the rest \
            stays secret); when more than two devices announce them, it asks for --address and lists them. \
            Use --address on networks without multicast. With a relay broker configured (`relay`), a join that \
            reaches no inviter by --address or mDNS is tried once through the broker.
            A device that is already paired is not paired again unless --replace is given (on the device that \
            shows the code when it already knows the joining device, on the joining device when it already knows \
            the inviting one); --replace replaces the old pairing and its key.
            By default the new device joins the whole device set: it gets a channel to every member, and every \
            member to it. With --single (on either device) the two are paired with each other only.
            With --json: JSON lines; first {"code": …, "expires": …}, last {"paired": {…}} or {"error": {…}}.
            """)

    @ParentCommand var parent: Meshctl

    @Argument(help: "The code the other device shows (join mode); `-` reads it from a prompt or standard input.")
    var code: String?

    @Option(help: ArgumentHelp("The other daemon's address (join mode); default: find it over mDNS.", valueName: "HOST:PORT"))
    var address: String?

    // .unconditional: a negative number is this option's (bad) value, not an unknown option.
    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds the new code stays valid (default: the daemon's, 300).", valueName: "SECONDS"))
    var expires: Double?

    @Flag(help: "Allow pairing with a device that is already paired, replacing its pairing.")
    var replace = false

    @Flag(help: "Pair these two devices only; the new device does not join the device set.")
    var single = false

    @Flag(help: "Print JSON lines.")
    var json = false

    func validate() throws {
        if code != nil {
            guard expires == nil else { throw ValidationError("--expires applies only when creating a code (without CODE)") }
        } else {
            guard address == nil else { throw ValidationError("--address needs the CODE shown by the other device") }
            if let expires, !(1...3600).contains(expires) { throw ValidationError("--expires must be between 1 and 3600 seconds") }
        }
    }

    func run() async throws {
        if let given = code {
            let typed: String
            if given == "-" {
                do {
                    typed = try PairCodeInput.readFromStandardInput()
                } catch var failure as CLIFailure {
                    failure.json = json
                    throw failure
                }
            } else {
                FileHandle.standardError.write(Data((PairCodeInput.argumentWarning + "\n").utf8))
                typed = given
            }
            let replace = replace, single = single
            let device = try await withDaemon(parent, json: json) {
                try await $0.joinPairing(code: typed, address: address, replace: replace, single: single)
            }
            report(device)
        } else {
            try await withDaemon(parent, json: json) { try await createAndWait($0) }
        }
    }

    private func createAndWait(_ client: MeshClient) async throws {
        let interrupts = InterruptSignal.stream()
        let invitation = try await client.createPairingCode(validFor: expires, replace: replace, single: single)
        if json {
            Output.jsonLine(invitation)
        } else {
            let listen = (try? await client.status().listen) ?? "HOST:PORT"
            print("Pairing code: \(invitation.code)")
            print("On the other device run:  meshctl pair -     and type the code at the prompt")
            print("  (without mDNS on the network: meshctl pair - --address \(Self.hint(listen)))")
        }
        let showCountdown = !json && Output.stdoutIsTerminal
        let outcome = await withTaskGroup(of: Outcome?.self) { group in
            group.addTask {
                do { return .paired(try await client.awaitPairing(code: invitation.code)) } catch { return .failed(error) }
            }
            group.addTask {
                for await _ in interrupts { return .interrupted }
                return nil
            }
            if showCountdown {
                group.addTask {
                    await Self.countdown(until: invitation.expires)
                    return nil
                }
            }
            var result: Outcome = .interrupted
            for await next in group {
                if let next { result = next; break }
            }
            group.cancelAll()
            return result
        }
        if showCountdown {
            print("\r\u{1B}[2K", terminator: "")
            fflush(nil)
        }
        switch outcome {
        case .paired(let device):
            report(device)
        case .failed(let error):
            throw error
        case .interrupted:
            try? await client.cancelPairing(code: invitation.code)
            CLIFailure(exitCode: CLIFailure.interrupted, code: "cancelled", message: "pairing cancelled; the code is no longer valid", json: json).report()
            throw ExitCode(CLIFailure.interrupted)
        }
    }

    private enum Outcome: Sendable {
        case paired(PairedDevice)
        case failed(any Error)
        case interrupted
    }

    private func report(_ device: PairedDevice) {
        if json {
            Output.jsonLine(["paired": device])
        } else {
            print("Paired with \(device.name)" + (device.via == "relay" ? " (paired through the relay broker)" : ""))
            print("  device ID:    \(device.deviceID)")
            print("  verification: \(device.verification)   (the other device must show the same)")
        }
    }

    private static func countdown(until expires: Double) async {
        while !Task.isCancelled {
            let left = expires - Date().timeIntervalSince1970
            guard left > 0 else { return }
            print("\r\u{1B}[2KWaiting for the other device… the code expires in \(Output.duration(left.rounded(.up)))", terminator: "")
            fflush(nil)
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// The listen address with a wildcard host replaced by a placeholder.
    private static func hint(_ listen: String) -> String {
        for wildcard in ["0.0.0.0:", "[::]:"] where listen.hasPrefix(wildcard) {
            return "<this device's address>:" + listen.dropFirst(wildcard.count)
        }
        return listen
    }
}
