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
        let widths = first.indices.map { column in all.map { visible($0[column]).count }.max() ?? 0 }
        for row in all.map({ $0.map(visible) }) {
            let cells = row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }
            print(cells.joined(separator: "  "))
        }
    }

    /// `text` safe to print on a terminal: control characters (C0, DEL, C1 — escape sequences
    /// that could rewrite the screen) shown as `\u{1B}`. Names, owners, statuses and feature IDs
    /// come from apps and peers, not only from this user.
    static func visible(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value)
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

    /// Makes stdout line-buffered (C stdio block-buffers it when it is not a terminal).
    ///
    /// C's `stdout` is a global variable Swift 6 refuses to read outside an isolation it can
    /// check; its address comes from the C library instead (`RTLD_DEFAULT` is a null handle).
    /// Called once, at start, before any output.
    static func lineBufferStandardOutput() {
        guard let symbol = dlsym(nil, "stdout") else { return }
        let file = symbol.assumingMemoryBound(to: UnsafeMutablePointer<FILE>?.self).pointee
        setvbuf(file, nil, _IOLBF, 0)
    }

    /// Whether stdout is a terminal.
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
}
