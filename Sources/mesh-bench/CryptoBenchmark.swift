/// Placeholder; the crypto issue fills this in.
enum CryptoBenchmark {
    static func run(arguments: [String]) { print("crypto benchmark: not yet implemented") }
}
