#if canImport(Glibc)
import Glibc
#endif
import Foundation
import MeshDaemon
import Testing

/// What a person sees when `--config` names something that is not a usable config file, and
/// for numbers the file cannot hold.
@Suite("meshd.toml files that cannot be read")
struct ConfigFileReaderTests {
    /// A fresh folder under /tmp, removed by the caller.
    static func folder() throws -> String {
        let path = "/tmp/smt-config-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    static func loadError(_ path: String) -> String? {
        do {
            var overrides = ConfigurationLoader.Overrides()
            overrides.configFile = path
            _ = try ConfigurationLoader(environment: ["HOME": "/nonexistent"]).load(mode: .user, overrides: overrides)
            return nil
        } catch {
            return error.description
        }
    }

    /// Whoever may write the config decides who pairs: a file group or others may write is
    /// refused with the chmod to run; readable by all (as files in /etc are) is fine.
    @Test(arguments: [0o664, 0o646, 0o666] as [mode_t])
    func aConfigFileOthersMayWriteIsRefused(mode: mode_t) throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/meshd.toml"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("name = \"x\"\n".utf8)))
        #expect(chmod(file, mode) == 0)
        #expect(Self.loadError(file) == "\(file): is mode 0\(String(mode, radix: 8)): group or others may change it; check it, then run chmod go-w \(file)")
        #expect(chmod(file, 0o644) == 0)
        #expect(Self.loadError(file) == nil)
    }

    /// A config file of another user (not root) is refused; one of root is read by any daemon.
    @Test(.enabled(if: geteuid() == 0, "needs root to give the file to another user"))
    func aConfigFileOfAnotherUserIsRefused() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/meshd.toml"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("name = \"x\"\n".utf8)))
        #expect(chown(file, 4242, 4242) == 0)
        #expect(Self.loadError(file) == "\(file): belongs to uid 4242; meshd (uid 0) reads only a config file of root or its own user: run chown 0 \(file) (or chown root)")
        #expect(chown(file, 0, 0) == 0)
        #expect(Self.loadError(file) == nil)
    }

    @Test func aFolderIsNamedAsAFolder() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(Self.loadError(folder) == "\(folder): is a folder, not a config file")
    }

    @Test func aFIFOIsRefusedWithoutWaitingForAWriter() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fifo = folder + "/meshd.toml"
        #expect(mkfifo(fifo, 0o600) == 0)
        let message = Self.loadError(fifo)
        #expect(message?.hasPrefix("\(fifo): is not a regular file") == true, "\(message ?? "no error")")
    }

    @Test func binaryGarbageSaysItIsNotUTF8AndNamesTheLine() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/meshd.toml"
        try Data("name = \"a\"\n# fine\nname = \"\u{e9}".utf8 + [0xFF, 0xFE, 0x22, 0x0A]).write(to: URL(fileURLWithPath: file))
        #expect(Self.loadError(file) == "\(file):3: the config file is not UTF-8 text (is this the right file?)")
    }

    @Test func aHugeFileIsRefusedAtOnce() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/meshd.toml"
        try Data(("# " + String(repeating: "x", count: 8 << 20) + "\n").utf8).write(to: URL(fileURLWithPath: file))
        let started = Date()
        #expect(Self.loadError(file) == "\(file): is larger than 1024 KiB; a meshd config file is a few lines (is this the right file?)")
        #expect(Date().timeIntervalSince(started) < 2)
    }

    @Test func devNullIsAnEmptyConfigAndABOMIsSkipped() throws {
        #expect(Self.loadError("/dev/null") == nil)
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/meshd.toml"
        try Data([0xEF, 0xBB, 0xBF] + Array("name = \"bom\"\n".utf8)).write(to: URL(fileURLWithPath: file))
        #expect(Self.loadError(file) == nil)
    }

    @Test(arguments: [
        ("keepalive_interval = 1e400", "meshd.toml:1: key 'keepalive_interval': '1e400' is out of range (integers are 64-bit, floats must be finite)"),
        ("listen = 99999999999999999999", "meshd.toml:1: key 'listen': '99999999999999999999' is out of range (integers are 64-bit, floats must be finite)"),
        ("socket_mode = 0o7777777777777777777777", "meshd.toml:1: key 'socket_mode': '0o7777777777777777777777' is out of range (integers are 64-bit, floats must be finite)"),
        ("reachability_lease = -inf", "meshd.toml:1: key 'reachability_lease': '-inf': numbers must be finite"),
        ("keepalive_interval = nan", "meshd.toml:1: key 'keepalive_interval': 'nan': numbers must be finite"),
        ("name = kitchen", "meshd.toml:1: key 'name': 'kitchen' is not a value; strings need quotes"),
    ])
    func numbersTheFileCannotHoldSaySo(text: String, expected: String) {
        do {
            _ = try ConfigFile(parsing: text, fileName: "meshd.toml")
            Issue.record("no error for \(text)")
        } catch {
            #expect(error.description == expected)
        }
    }
}

/// Flags and keys whose values used to pass the loader and fail later (a name pairing refuses,
/// a clock skew whose nanoseconds wrap).
@Suite("meshd flags checked at start")
struct ConfigFlagRangeTests {
    static func loadError(_ configure: (inout ConfigurationLoader.Overrides) -> Void) -> String? {
        var overrides = ConfigurationLoader.Overrides()
        overrides.stateDirectory = "/tmp/smt-never-created"
        configure(&overrides)
        do {
            _ = try ConfigurationLoader(environment: ["HOME": "/nonexistent", "MESH_TEST_RUN": "1"]).load(mode: .user, overrides: overrides)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func aNamePairingWouldRefuseIsRefusedAtStart() {
        #expect(Self.loadError { $0.name = String(repeating: "é", count: 40) }
                == "--name: must be 1 to 64 bytes of printable UTF-8: the device name is 80 bytes of UTF-8; the limit is 64")
        #expect(Self.loadError { $0.name = "kitchen\u{1B}[31m" }
                == "--name: must be 1 to 64 bytes of printable UTF-8: the device name contains the control character U+1B")
        #expect(Self.loadError { $0.name = "kitchen-pi" } == nil)
        do {
            _ = try ConfigFile(parsing: "name = \"\(String(repeating: "ü", count: 33))\"", fileName: "meshd.toml")
            Issue.record("a 66-byte name was accepted")
        } catch {
            #expect(error.description == "meshd.toml:1: key 'name': must be 1 to 64 bytes of printable UTF-8: the device name is 66 bytes of UTF-8; the limit is 64")
        }
    }

    @Test func aClockOffsetWhoseNanosecondsWouldWrapIsRefused() {
        let limit = ConfigurationLoader.maximumClockOffsetMilliseconds
        #expect(Self.loadError { $0.clockOffsetMilliseconds = .max }?.hasPrefix("--clock-offset-ms: 9223372036854775807 is out of range") == true)
        #expect(Self.loadError { $0.clockOffsetMilliseconds = .min }?.hasPrefix("--clock-offset-ms: -9223372036854775808 is out of range") == true)
        #expect(Self.loadError { $0.clockOffsetMilliseconds = -limit } == nil)
        #expect(Self.loadError { $0.clockOffsetMilliseconds = 2500 } == nil)
    }
}
