import Foundation
import MeshDiscovery

/// One JSON line of probe output.
struct ProbeLine: Encodable, Sendable {
    struct Address: Encodable, Sendable {
        var host: String
        var port: UInt16
        var family: String
        var interface: String?
    }

    var tMs: Int64 = 0
    var event: String
    var name: String?
    var source: String?
    var device: String?
    var pair: String?
    var version: Int?
    var addresses: [Address]?
    var reason: String?
    var code: String?

    init(event: String, name: String? = nil) {
        self.event = event
        self.name = name
    }

    init(_ event: DiscoveryEvent) {
        switch event {
        case .resolved(let service):
            self.init(event: "resolved", name: service.instanceName)
            source = service.source.rawValue
            device = service.deviceIDHint
            pair = service.pairingHint
            version = service.protocolVersion
            addresses = service.addresses.map {
                Address(host: $0.host, port: $0.port, family: $0.family.rawValue, interface: $0.interfaceName)
            }
        case .removed(let name, let source):
            self.init(event: "removed", name: name)
            self.source = source.rawValue
        case .available:
            self.init(event: "available")
        case .unavailable(let why):
            self.init(event: "unavailable")
            reason = why.message
            code = why.code.description
        case .published(let name):
            self.init(event: "published", name: name)
        }
    }

    enum CodingKeys: String, CodingKey {
        case tMs = "t_ms", event, name, source, device, pair, version, addresses, reason, code
    }
}

/// Writes lines to stdout unbuffered, stamped with milliseconds since the probe started.
final class ProbeOutput: Sendable {
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant

    init() {
        start = clock.now
    }

    func emit(_ line: ProbeLine) {
        var stamped = line
        let elapsed = clock.now - start
        stamped.tMs = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var data = try? encoder.encode(stamped) else { return }
        data.append(UInt8(ascii: "\n"))
        FileHandle.standardOutput.write(data)
    }
}

/// Lines from stdin, read on a dedicated thread (a blocking read must not sit on the
/// cooperative pool). The stream ends at end of input.
enum ProbeInput {
    static func lines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        let reader = Thread {
            while let line = readLine(strippingNewline: true) {
                continuation.yield(line.trimmingCharacters(in: .whitespaces))
            }
            continuation.finish()
        }
        reader.start()
        return stream
    }
}
