/// A cursor over the characters of one logical config line; the lexer of `ConfigFileParser`.
struct ConfigScanner {
    /// A syntax error; `needsMoreInput` when the value ran off the end of an unclosed array.
    struct Failure: Error {
        var message: String
        var needsMoreInput = false
    }

    private var scalars: [Unicode.Scalar]
    private var position = 0

    init(_ scalars: [Unicode.Scalar]) { self.scalars = scalars }

    var peek: Unicode.Scalar? { position < scalars.count ? scalars[position] : nil }
    var atEndOrComment: Bool { peek == nil || peek == "#" }

    mutating func append(_ more: [Unicode.Scalar]) { scalars += more }

    mutating func skipWhitespace(newlines: Bool = false) {
        while let c = peek, c == " " || c == "\t" || (newlines && (c == "\n" || c == "#")) {
            if c == "#" {
                while let d = peek, d != "\n" { position += 1 }
            } else {
                position += 1
            }
        }
    }

    mutating func consume(_ c: Unicode.Scalar) -> Bool {
        guard peek == c else { return false }
        position += 1
        return true
    }

    mutating func readBareKey() -> String {
        var key = ""
        while let c = peek, ("a"..."z").contains(c) || ("A"..."Z").contains(c)
                || c == "_" || c == "-" || ("0"..."9").contains(c) {
            key.unicodeScalars.append(c)
            position += 1
        }
        return key
    }

    mutating func readValue() throws(Failure) -> ConfigFileParser.Value {
        skipWhitespace()
        guard let c = peek else { throw Failure(message: "missing value after '='") }
        switch c {
        case "\"" where startsTripleQuote(c), "'" where startsTripleQuote(c):
            throw Failure(message: #"multi-line strings (""" or ''') are not supported; write the value on one line"#)
        case "{": throw Failure(message: "inline tables ({…}) are not supported; every key is a top-level key = value")
        case "\"": return .string(try readBasicString())
        case "'": return .string(try readLiteralString())
        case "[": return .array(try readArray())
        case "t", "f": return .boolean(try readBoolean())
        default: return try readNumber()
        }
    }

    private func startsTripleQuote(_ quote: Unicode.Scalar) -> Bool {
        position + 2 < scalars.count && scalars[position + 1] == quote && scalars[position + 2] == quote
    }

    private mutating func readArray() throws(Failure) -> [ConfigFileParser.Value] {
        position += 1
        var values: [ConfigFileParser.Value] = []
        while true {
            skipWhitespace(newlines: true)
            guard let c = peek else { throw Failure(message: "array is not closed with ']'", needsMoreInput: true) }
            if c == "]" { position += 1; return values }
            values.append(try readValue())
            skipWhitespace(newlines: true)
            if consume(",") { continue }
            guard peek != nil else { throw Failure(message: "array is not closed with ']'", needsMoreInput: true) }
            guard consume("]") else { throw Failure(message: "expected ',' or ']' in the array") }
            return values
        }
    }

    private mutating func readBasicString() throws(Failure) -> String {
        position += 1
        var text = ""
        while let c = peek {
            position += 1
            switch c {
            case "\"": return text
            case "\n": throw Failure(message: "string is not closed on its line")
            case "\\":
                guard let e = peek else { break }
                position += 1
                switch e {
                case "\"": text += "\""
                case "\\": text += "\\"
                case "n": text += "\n"
                case "t": text += "\t"
                case "r": text += "\r"
                case "u", "U":
                    let count = e == "u" ? 4 : 8
                    guard position + count <= scalars.count,
                          let code = UInt32(String(String.UnicodeScalarView(scalars[position..<position + count])), radix: 16),
                          let scalar = Unicode.Scalar(code) else {
                        throw Failure(message: "bad \\\(e) escape in string")
                    }
                    position += count
                    text.unicodeScalars.append(scalar)
                default: throw Failure(message: "unknown escape '\\\(e)' in string")
                }
            default:
                if c.value < 0x20 && c != "\t" { throw Failure(message: "control character in string") }
                text.unicodeScalars.append(c)
            }
        }
        throw Failure(message: "string is not closed with '\"'")
    }

    private mutating func readLiteralString() throws(Failure) -> String {
        position += 1
        var text = ""
        while let c = peek {
            position += 1
            if c == "'" { return text }
            if c == "\n" { break }
            text.unicodeScalars.append(c)
        }
        throw Failure(message: "string is not closed with \"'\"")
    }

    private mutating func readBoolean() throws(Failure) -> Bool {
        let word = readWord()
        switch word {
        case "true": return true
        case "false": return false
        default: throw Failure(message: "'\(word)' is not a value; strings need quotes")
        }
    }

    private mutating func readWord() -> String {
        var word = ""
        while let c = peek, c != " ", c != "\t", c != ",", c != "]", c != "#", c != "\n" {
            word.unicodeScalars.append(c)
            position += 1
        }
        return word
    }

    private mutating func readNumber() throws(Failure) -> ConfigFileParser.Value {
        let word = readWord()
        let bad = Failure(message: "'\(word)' is not a value; strings need quotes")
        guard !word.isEmpty, !word.hasPrefix("_"), !word.hasSuffix("_"), !word.contains("__") else { throw bad }
        let digits = word.replacingUnderscores()
        for (prefix, radix) in [("0o", 8), ("0x", 16), ("0b", 2)] where digits.hasPrefix(prefix) {
            guard let value = Int64(digits.dropFirst(2), radix: radix) else {
                let valid = !digits.dropFirst(2).isEmpty && digits.dropFirst(2).allSatisfy { $0.isHexDigit && Int(String($0), radix: radix) != nil }
                throw valid ? Failure(message: "'\(word)' is out of range (integers are 64-bit, floats must be finite)") : bad
            }
            return .integer(value)
        }
        if let value = Int64(digits) {
            if digits.count > 1, digits.trimmingSign().hasPrefix("0") { throw Failure(message: "'\(word)': leading zeros are not allowed; write octal as 0o…") }
            return .integer(value)
        }
        if digits.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let value = Double(digits), value.isFinite {
            return .float(value)
        }
        // A number that does not fit (or inf/nan) is not a quoting problem: say what it is.
        if ["inf", "nan"].contains(digits.trimmingSign()) {
            throw Failure(message: "'\(word)': numbers must be finite")
        }
        if let first = digits.trimmingSign().first, first.isASCII, first.isNumber, Double(digits) != nil {
            throw Failure(message: "'\(word)' is out of range (integers are 64-bit, floats must be finite)")
        }
        if word.looksLikeDateOrTime {
            throw Failure(message: "'\(word)': dates and times are not supported; write a number or a quoted string")
        }
        throw bad
    }
}

private extension String {
    func replacingUnderscores() -> String { String(filter { $0 != "_" }) }
    func trimmingSign() -> Substring { (hasPrefix("+") || hasPrefix("-")) ? dropFirst() : Substring(self) }
    /// TOML's date and time values start like `1979-05-27` or `07:32`.
    var looksLikeDateOrTime: Bool {
        let shape = String(prefix(10).map { $0.isASCII && $0.isNumber ? "9" : $0 })
        return shape.hasPrefix("9999-99-99") || shape.hasPrefix("99:99")
    }
}
