/// The last steps of a run, printed when it fails, with the command that replays it.
public struct SimulationTrace: Sendable {
    /// Lines kept (the oldest is dropped past this).
    public let capacity: Int
    private var lines: [String] = []
    private var head = 0
    /// Lines recorded in all.
    public private(set) var count = 0

    public init(capacity: Int = 40) {
        self.capacity = max(capacity, 1)
    }

    /// Notes what happened at `milliseconds` into the run.
    public mutating func record(step: Int, milliseconds: Double, _ text: String) {
        let line = "[\(step) @\(Self.format(milliseconds)) ms] \(text)"
        count += 1
        if lines.count < capacity {
            lines.append(line)
        } else {
            lines[head] = line
            head = (head + 1) % capacity
        }
    }

    /// The kept lines, oldest first.
    public var recent: [String] { Array(lines[head...] + lines[..<head]) }

    static func format(_ milliseconds: Double) -> String {
        let tenths = Int((milliseconds * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
