/// Placeholder; the core issue fills this in.
enum EngineBenchmark {
    static func run(arguments: [String]) { print("engine benchmark: not yet implemented") }
}
