/// The last steps of a run, printed when it fails, with the command that replays it, and a
/// digest of every line recorded, so two runs of a seed can be compared byte for byte.
public struct SimulationTrace: Sendable {
    /// Lines kept (the oldest is dropped past this).
    public let capacity: Int
    private var lines: [String] = []
    private var head = 0
    /// Lines recorded in all.
    public private(set) var count = 0
    /// FNV-1a (64 bit) over the bytes of every line recorded, each followed by a newline: equal
    /// for two runs exactly when they recorded the same lines (up to a hash collision).
    public private(set) var digest: UInt64 = 0xcbf2_9ce4_8422_2325

    public init(capacity: Int = 40) {
        self.capacity = max(capacity, 1)
    }

    /// Notes what happened at `milliseconds` into the run.
    public mutating func record(step: Int, milliseconds: Double, _ text: String) {
        let line = "[\(step) @\(Self.format(milliseconds)) ms] \(text)"
        count += 1
        for byte in line.utf8 { digest = (digest ^ UInt64(byte)) &* 0x100_0000_01b3 }
        digest = (digest ^ 0x0A) &* 0x100_0000_01b3
        if lines.count < capacity {
            lines.append(line)
        } else {
            lines[head] = line
            head = (head + 1) % capacity
        }
    }

    /// The kept lines, oldest first.
    public var recent: [String] { Array(lines[head...] + lines[..<head]) }

    /// The digest as 16 hex digits.
    public var digestText: String { Self.hex(digest) }

    /// `value` as 16 hex digits.
    public static func hex(_ value: UInt64) -> String {
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    static func format(_ milliseconds: Double) -> String {
        let tenths = Int((milliseconds * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
