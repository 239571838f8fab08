/// A value bound to a SQL parameter. Part of the SQLite wrapper; never leaves the store.
enum SQLiteValue {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
    case null

    /// `.integer`, or `.null` for `nil`.
    static func optional(_ value: Int64?) -> SQLiteValue { value.map { .integer($0) } ?? .null }
    /// `.real`, or `.null` for `nil`.
    static func optional(_ value: Double?) -> SQLiteValue { value.map { .real($0) } ?? .null }
    /// `.text`, or `.null` for `nil`.
    static func optional(_ value: String?) -> SQLiteValue { value.map { .text($0) } ?? .null }
}
