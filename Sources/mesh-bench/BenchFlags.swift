/// The `--name N` flags of the comparison modes: every flag takes one whole number from 1 to
/// 10 000 000, and an unknown flag, a missing or out-of-range number make the command line wrong.
enum BenchFlags {
    static let largest = 10_000_000

    /// Calls `apply` with each flag and its number in order; nil when the line is wrong or
    /// `apply` does not know a flag (returns false).
    static func parse<Settings>(_ arguments: [String], into settings: Settings,
                                _ apply: (inout Settings, String, Int) -> Bool) -> Settings? {
        var settings = settings
        var index = 0
        while index < arguments.count {
            guard index + 1 < arguments.count, let value = Int(arguments[index + 1]), value > 0, value <= largest,
                  apply(&settings, arguments[index], value) else { return nil }
            index += 2
        }
        return settings
    }
}
