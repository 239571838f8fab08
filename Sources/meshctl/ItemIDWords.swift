import ArgumentParser

/// The one item ID `queue cancel` and `queue drop` take. They collect it as words, not parsed as
/// a number by the parser, so that `-1` is refused as a bad ID instead of being read as an
/// unknown option (and the ID reported as missing). Item IDs are SQLite row IDs; the daemon would
/// refuse a larger one anyway.
enum ItemIDWords {
    /// The ID in `words`, or a `ValidationError` naming `noun` (with its `article`) and the
    /// command that lists the IDs.
    static func id(in words: [String], noun: String, article: String, listedBy command: String) throws -> UInt64 {
        guard let word = words.first else { throw ValidationError("Missing expected argument '<id>'") }
        guard words.count == 1 else {
            throw ValidationError("expected one \(noun) ID, got \(words.count): \(words.joined(separator: " "))")
        }
        guard let id = UInt64(word), id >= 1, id <= UInt64(Int64.max) else {
            throw ValidationError("'\(word)' is not \(article) \(noun) ID: <id> is a number from 1 to \(Int64.max), as `\(command)` shows it")
        }
        return id
    }
}
