import ArgumentParser

/// `--feature F`: the feature a data command works on (shared by send, watch, snapshot get).
struct FeatureOptions: ParsableArguments {
    @Option(help: ArgumentHelp("The feature (1–255 bytes), e.g. demo.", valueName: "F"))
    var feature: String

    func validate() throws {
        guard !feature.isEmpty, feature.utf8.count <= 255 else {
            throw ValidationError("--feature must be 1–255 bytes")
        }
    }
}

/// `--json`: print JSON (one object per line for streams) instead of aligned text.
struct JSONOption: ParsableArguments {
    @Flag(help: "Print JSON for scripts instead of aligned text.")
    var json = false
}
