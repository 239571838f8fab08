import ArgumentParser
import Foundation
import Logging
import MeshDiscovery

/// Publishes one advertisement and prints every discovery event as a JSON line, for a fixed
/// time. The lab tests run it inside test hosts; people can run it to check a network.
///
/// stdout: one JSON object per line (`{"t_ms":…,"event":"resolved",…}`); logs go to stderr.
/// stdin (one command per line): `pair HINT`, `unpair`, `quit`. End of stdin also quits,
/// unless `--ignore-stdin` is given.
@main
struct DiscoveryProbe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mesh-discovery-probe",
        abstract: "Advertise _sessionmesh._udp and print discovery events as JSON lines.")

    @Option(help: "Service instance name to advertise.")
    var name: String

    @Option(help: "Port to advertise.")
    var port: UInt16 = 47_470

    @Option(help: "Device ID; its first 8 letters/digits are advertised as the hint.")
    var deviceID: String

    @Option(help: "Advertise this public pairing hint from the start.")
    var pair: String?

    @Option(help: "Exit after this many seconds.")
    var duration: Double = 10

    @Option(name: .customLong("static"), help: "A static peer HOST:PORT (repeatable).")
    var staticPeers: [String] = []

    @Flag(help: "Do not use Avahi (static peers only).")
    var noAvahi = false

    @Flag(help: "Keep running when stdin ends.")
    var ignoreStdin = false

    @Option(help: "Log level for stderr (trace, debug, info, warning, error).")
    var logLevel: String = "info"

    func validate() throws {
        guard duration > 0, duration <= 3600 else { throw ValidationError("--duration must be in (0, 3600]") }
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "mesh-discovery-probe")
        let output = ProbeOutput()

        let initialAdvertisement = try DiscoveryAdvertisement(
            instanceName: name, port: port,
            deviceIDHint: DiscoveryAdvertisement.deviceIDHint(for: deviceID), pairingHint: pair)
        var members: [any PeerDiscovery] = []
        if !noAvahi { members.append(AvahiPeerDiscovery(logger: logger)) }
        if !staticPeers.isEmpty {
            members.append(StaticPeerDiscovery(peers: try staticPeers.map { try StaticPeer(parsing: $0) }, logger: logger))
        }
        let discovery = MergedPeerDiscovery(members)
        let events = discovery.events()
        try await discovery.start(advertising: initialAdvertisement)
        output.emit(ProbeLine(event: "started", name: name))

        let commands = ProbeInput.lines()
        let ignoreEOF = ignoreStdin
        let seconds = duration
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events { output.emit(ProbeLine(event)) }
            }
            group.addTask {
                var advertisement = initialAdvertisement
                for await line in commands {
                    let words = line.split(separator: " ").map(String.init)
                    switch words.first {
                    case "pair":
                        if let next = try? advertisement.withPairingHint(words.count > 1 ? words[1] : "") {
                            advertisement = next
                            try? await discovery.updateAdvertisement(advertisement)
                            output.emit(ProbeLine(event: "pairing-on", name: advertisement.instanceName))
                        }
                    case "unpair":
                        if let next = try? advertisement.withPairingHint(nil) {
                            advertisement = next
                            try? await discovery.updateAdvertisement(advertisement)
                            output.emit(ProbeLine(event: "pairing-off", name: advertisement.instanceName))
                        }
                    case "quit":
                        return
                    default:
                        continue
                    }
                }
                if ignoreEOF { try? await Task.sleep(for: .seconds(seconds)) }
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
            }
            _ = await group.next()
            group.cancelAll()
        }
        await discovery.stop()
        output.emit(ProbeLine(event: "stopped", name: name))
    }
}
