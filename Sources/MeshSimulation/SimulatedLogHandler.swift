import Foundation
import Logging

/// The daemons' loggers in a simulation: silent, or with `MESH_SIM_DEBUG_LOG` set (one seed,
/// `MESH_SIM_SEED`), every message at debug and above printed with the virtual instant and the
/// daemon, to follow what a node decided between two trace lines.
struct SimulatedLogHandler: LogHandler {
    /// `MESH_SIM_DEBUG_LOG` set: print the daemons' logs.
    static let enabled = ProcessInfo.processInfo.environment["MESH_SIM_DEBUG_LOG"] != nil

    /// A daemon's logger: printing with `clock`'s instants when enabled, else a no-op.
    static func logger(label: String, clock: VirtualClock) -> Logger {
        guard enabled else { return Logger(label: "sim.\(label)", factory: { _ in SwiftLogNoOpLogHandler() }) }
        return Logger(label: "sim.\(label)", factory: { _ in SimulatedLogHandler(label: label, clock: clock) })
    }

    let label: String
    let clock: VirtualClock
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        print(String(format: "log @%.3f ms %@ %@: %@", clock.milliseconds, label, "\(event.level)", "\(event.message)") + fields)
    }
}
