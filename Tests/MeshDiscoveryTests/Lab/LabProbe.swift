import Foundation

/// A running `mesh-discovery-probe` and its decoded JSON-line events.
struct LabProbe: Sendable {
    /// One decoded probe line.
    struct Event: Decodable, Sendable {
        struct Address: Decodable, Sendable {
            var host: String
            var port: UInt16
            var family: String
            var interface: String?
        }

        var t_ms: Int64
        var event: String
        var name: String?
        var device: String?
        var pair: String?
        var version: Int?
        var addresses: [Address]?
        var code: String?
        var reason: String?

        var hosts: [String] { addresses?.map(\.host) ?? [] }
    }

    let child: ChildProcess

    init(_ child: ChildProcess) {
        self.child = child
    }

    var events: [Event] {
        child.output.compactMap { try? JSONDecoder().decode(Event.self, from: Data($0.text.utf8)) }
    }

    /// The first event at output index ≥ `from` matching `predicate`, awaited until `timeout`.
    /// Returns the event, its output index, and when the test process received it.
    func waitFor(_ what: String, from: Int = 0, timeout: Duration,
                 where predicate: @escaping (Event) -> Bool) async throws -> (event: Event, index: Int, at: ContinuousClock.Instant) {
        let found = await child.waitForLine(from: from, timeout: timeout) { text in
            guard let event = try? JSONDecoder().decode(Event.self, from: Data(text.utf8)) else { return false }
            return predicate(event)
        }
        guard let found, let event = try? JSONDecoder().decode(Event.self, from: Data(found.line.text.utf8)) else {
            throw LabError("\(child.label): no '\(what)' within \(timeout)")
        }
        return (event, found.index, found.line.receivedAt)
    }

    /// Waits for `resolved` of `name` whose addresses satisfy `addresses`.
    func waitForResolved(_ name: String, from: Int = 0, timeout: Duration = .seconds(5),
                         where predicate: @escaping (Event) -> Bool = { _ in true }) async throws -> (event: Event, index: Int, at: ContinuousClock.Instant) {
        try await waitFor("resolved \(name)", from: from, timeout: timeout) {
            $0.event == "resolved" && $0.name == name && predicate($0)
        }
    }

    /// Index of the next output line (to wait only for later events).
    var mark: Int { child.output.count }
}
