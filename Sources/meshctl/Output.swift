import Foundation

/// Printing helpers: JSON for scripts, aligned text for people.
enum Output {
    /// Prints `value` as one compact JSON line with sorted keys.
    static func jsonLine(_ value: some Encodable) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if let data = try? encoder.encode(value), let text = String(data: data, encoding: .utf8) {
            print(text)
        }
        fflush(nil)
    }

    /// Prints `value` as indented JSON with sorted keys.
    static func json(_ value: some Encodable) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        if let data = try? encoder.encode(value), let text = String(data: data, encoding: .utf8) {
            print(text)
        }
    }

    /// Prints rows (after an optional header) as columns padded to the widest cell; the last
    /// column is not padded.
    static func table(_ header: [String]?, _ rows: [[String]]) {
        let all = (header.map { [$0] } ?? []) + rows
        guard let first = all.first else { return }
        let widths = first.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        for row in all {
            let cells = row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }
            print(cells.joined(separator: "  "))
        }
    }

    /// `1h 02m 03s`, `4m 05s`, `6s`.
    static func duration(_ seconds: Double) -> String {
        let total = Int(max(0, seconds).rounded(.down))
        let (h, m, s) = (total / 3600, (total % 3600) / 60, total % 60)
        if h > 0 { return String(format: "%dh %02dm %02ds", h, m, s) }
        if m > 0 { return String(format: "%dm %02ds", m, s) }
        return "\(s)s"
    }

    /// Microseconds as `57 µs` or `1.25 ms`; `-` when absent.
    static func micros(_ value: Double?) -> String {
        guard let value else { return "-" }
        return value < 1000 ? String(format: "%.0f µs", value) : String(format: "%.2f ms", value / 1000)
    }

    /// The short form of a device ID: its first group, or its first 8 characters.
    static func shortID(_ id: String) -> String {
        if let dash = id.firstIndex(of: "-") { return String(id[..<dash]) }
        return String(id.prefix(8))
    }

    /// Whether stdout is a terminal.
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
}
