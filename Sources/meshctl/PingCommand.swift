import ArgumentParser
import MeshLocalAPI

/// `meshctl ping DEVICE`: round trips over the datagram and the stream path.
struct PingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ping", abstract: "Measure round trips to a paired device over each path (min/p50/p99).")

    @ParentCommand var parent: Meshctl

    @Argument(help: "The device ID (full or short).")
    var device: String

    // .unconditional: a negative number is this option's (bad) value, not an unknown option.
    @Option(parsing: .unconditional, help: "Probes per path (1–10000).")
    var count = PingRequest.defaultCount

    @Flag(help: "Print the report as JSON.")
    var json = false

    func validate() throws {
        if device.allSatisfy(\.isWhitespace) { throw ValidationError("<device> must be a device ID, as `meshctl peers` shows it") }
        guard PingRequest.countRange.contains(count) else {
            throw ValidationError("--count must be between \(PingRequest.countRange.lowerBound) and \(PingRequest.countRange.upperBound)")
        }
    }

    func run() async throws {
        let report = try await withDaemon(parent, json: json) { try await $0.ping(deviceID: device, count: count) }
        if json {
            Output.json(report)
            return
        }
        Output.table(["PATH", "SENT", "RECEIVED", "MIN", "P50", "P99", "MAX"], report.paths.map { path in
            [path.path.rawValue, "\(path.sent)", "\(path.received)", Output.micros(path.minMicroseconds),
             Output.micros(path.p50Microseconds), Output.micros(path.p99Microseconds), Output.micros(path.maxMicroseconds)]
        })
    }
}
