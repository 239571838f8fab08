import MeshDaemon
import Testing

@Suite("Configuration resolution")
struct ConfigurationLoaderTests {
    private func loader(_ environment: [String: String], files: [String: String] = [:]) -> ConfigurationLoader {
        ConfigurationLoader(environment: environment, workingDirectory: "/work", testOptionsNeedTestRun: false) { files[$0] }
    }

    /// A release build takes `--clock-offset-ms` only in a test run (`MESH_TEST_RUN=1`).
    @Test func aReleaseBuildRefusesTheClockOffsetOutsideATestRun() throws {
        var overrides = ConfigurationLoader.Overrides()
        overrides.clockOffsetMilliseconds = 2500
        let release = { (environment: [String: String]) in
            ConfigurationLoader(environment: environment, workingDirectory: "/work", testOptionsNeedTestRun: true) { _ in nil }
        }
        #expect(throws: ConfigurationError.self) { try release([:]).load(mode: .system, overrides: overrides) }
        do {
            _ = try release(["MESH_TEST_RUN": "0"]).load(mode: .system, overrides: overrides)
            Issue.record("MESH_TEST_RUN=0 let the clock offset through")
        } catch {
            #expect(error.description == "--clock-offset-ms: is for tests only; a release build takes it only when the environment sets MESH_TEST_RUN=1", "\(error)")
        }
        #expect(try release(["MESH_TEST_RUN": "1"]).load(mode: .system, overrides: overrides).clockOffsetMilliseconds == 2500)
        #expect(try release([:]).load(mode: .system, overrides: .init()).clockOffsetMilliseconds == 0, "without the flag nothing is needed")
        #expect(ConfigurationLoader(environment: [:]).testOptionsNeedTestRun == ConfigurationLoader.isReleaseBuild)
    }

    @Test func systemModeDefaultsWithoutAConfigFile() throws {
        let configuration = try loader([:]).load(mode: .system, overrides: .init())
        #expect(configuration.stateDirectory == "/var/lib/sessionmesh")
        #expect(configuration.socketPath == "/run/sessionmesh/meshd.sock")
        #expect(configuration.socketMode == 0o600)
        #expect(configuration.listen == .init(host: "0.0.0.0", port: 47470))
    }

    @Test func userModeUsesXDGFolders() throws {
        let environment = ["HOME": "/home/ann", "XDG_RUNTIME_DIR": "/run/user/1000"]
        let configuration = try loader(environment).load(mode: .user, overrides: .init())
        #expect(configuration.stateDirectory == "/home/ann/.local/state/sessionmesh")
        #expect(configuration.socketPath == "/run/user/1000/sessionmesh/meshd.sock")

        let defaults = try loader(["HOME": "/home/ann", "XDG_STATE_HOME": "/s", "XDG_CONFIG_HOME": "/c"]).defaults(for: .user)
        #expect(defaults.stateDirectory == "/s/sessionmesh")
        #expect(defaults.configFile == "/c/sessionmesh/meshd.toml")
        #expect(defaults.socketPath == "/s/sessionmesh/meshd.sock")
    }

    @Test func userModeWithoutARuntimeFolderPutsTheSocketInTheStateFolder() throws {
        #expect(try loader(["HOME": "/h"]).load(mode: .user, overrides: .init()).socketPath
                == "/h/.local/state/sessionmesh/meshd.sock")
        var overrides = ConfigurationLoader.Overrides()
        overrides.socketPath = "a.sock"
        #expect(try loader(["HOME": "/h"]).load(mode: .user, overrides: overrides).socketPath == "/work/a.sock")
    }

    @Test func flagsOverrideTheFileWhichOverridesDefaults() throws {
        let files = ["/etc/sessionmesh/meshd.toml": "name = \"file\"\nlisten = \"0.0.0.0:1\"\npeers = [\"10.0.0.1:5\"]\nsocket_mode = \"0660\"\n"]
        var overrides = ConfigurationLoader.Overrides()
        overrides.listen = "127.0.0.1:47001"
        overrides.peers = ["[::1]:47002", "127.0.0.1:47003"]
        overrides.clockOffsetMilliseconds = 2500
        let configuration = try loader([:], files: files).load(mode: .system, overrides: overrides)
        #expect(configuration.name == "file")
        #expect(configuration.socketMode == 0o660)
        #expect(configuration.listen == .init(host: "127.0.0.1", port: 47001))
        #expect(configuration.staticPeers == [.init(host: "::1", port: 47002), .init(host: "127.0.0.1", port: 47003)])
        #expect(configuration.clockOffsetMilliseconds == 2500)
    }

    @Test func mdnsIsOnByDefaultAndTurnedOffByTheFileOrTheFlag() throws {
        #expect(try loader([:]).load(mode: .system, overrides: .init()).mdns)
        let files = ["/etc/sessionmesh/meshd.toml": "mdns = false\n"]
        #expect(try loader([:], files: files).load(mode: .system, overrides: .init()).mdns == false)
        var overrides = ConfigurationLoader.Overrides()
        overrides.noMDNS = true
        #expect(try loader([:], files: ["/etc/sessionmesh/meshd.toml": "mdns = true\n"]).load(mode: .system, overrides: overrides).mdns == false)
    }

    @Test func aMissingExplicitConfigFileIsAnError() {
        var overrides = ConfigurationLoader.Overrides()
        overrides.configFile = "/nowhere/meshd.toml"
        #expect(throws: ConfigurationError(file: "/nowhere/meshd.toml", key: "--config", message: "the config file does not exist")) {
            try loader([:]).load(mode: .system, overrides: overrides)
        }
    }

    /// An empty path flag (`--state-dir "$STATE"` with STATE unset) is refused; before, it was
    /// taken as a relative path and resolved to the working directory, so the daemon put its
    /// identity key and queue there.
    @Test(arguments: ["--state-dir", "--socket", "--config"])
    func anEmptyPathFlagIsRefused(flag: String) {
        var overrides = ConfigurationLoader.Overrides()
        switch flag {
        case "--state-dir": overrides.stateDirectory = ""
        case "--socket": overrides.socketPath = ""
        default: overrides.configFile = ""
        }
        do {
            let configuration = try loader([:]).load(mode: .system, overrides: overrides)
            Issue.record("accepted: state \(configuration.stateDirectory), socket \(configuration.socketPath)")
        } catch {
            #expect(error.description == "\(flag): is empty; give a path, or leave the flag out for the default")
        }
    }

    @Test func aBadFlagNamesTheFlag() {
        var overrides = ConfigurationLoader.Overrides()
        overrides.peers = ["127.0.0.1"]
        do {
            _ = try loader([:]).load(mode: .system, overrides: overrides)
            Issue.record("no error")
        } catch {
            #expect(error.description == "--peer: '127.0.0.1' has no port; write HOST:PORT, e.g. 127.0.0.1:47470")
        }
    }

    @Test func aBadDefaultFileStopsStartUpWithItsLine() {
        let files = ["/etc/sessionmesh/meshd.toml": "\nlisten = 47470\n"]
        do {
            _ = try loader([:], files: files).load(mode: .system, overrides: .init())
            Issue.record("no error")
        } catch {
            #expect(error.description == "/etc/sessionmesh/meshd.toml:2: key 'listen': must be a quoted string, got an integer")
        }
    }
}
