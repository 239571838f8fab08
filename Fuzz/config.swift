import Foundation
@testable import MeshDaemon

// libFuzzer harness `config`: the config file (`meshd.toml`).
//
// The input is written to a file and read with `ConfigFileReader.read` (UTF-8 and size checks,
// the line of the first invalid byte); text that reads is resolved by `ConfigurationLoader.load`
// as meshd's `--config` (parse every key, then build the configuration), in system and user
// mode. The outcome must be a configuration or a `ConfigurationError`.
func fuzzConfig(_ bytes: [UInt8]) {
    let path = FuzzFiles.path("meshd.toml")
    // 0600 whatever the umask: a file others may write is refused before its text is read.
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]) else {
        fuzzFailure("cannot write \(path)")
    }
    let text: String?
    do {
        text = try ConfigFileReader.read(path)
    } catch {
        return
    }
    guard let text else { fuzzFailure("the config file written just now reads as absent") }
    let loader = ConfigurationLoader(environment: ["HOME": "/home/fuzz", "XDG_RUNTIME_DIR": "/run/user/1000"],
                                     workingDirectory: "/work") { $0 == "/fuzz/meshd.toml" ? text : nil }
    var overrides = ConfigurationLoader.Overrides()
    overrides.configFile = "/fuzz/meshd.toml"
    for mode in [ConfigurationLoader.Mode.system, .user] {
        do {
            _ = try loader.load(mode: mode, overrides: overrides)
        } catch {
            // A ConfigurationError: the expected outcome of bad text.
        }
    }
}

/// A private temporary folder for harnesses that go through files.
enum FuzzFiles {
    static let folder: String = {
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let folder = "\(base)/mesh-fuzz-\(getpid())"
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            fuzzFailure("cannot create \(folder): \(error)")
        }
        atexit { try? FileManager.default.removeItem(atPath: FuzzFiles.folder) }
        return folder
    }()

    static func path(_ name: String) -> String { folder + "/" + name }
}
