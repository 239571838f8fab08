import Foundation
@testable import MeshDaemon
@testable import MeshMQTT
import Testing

/// The relay's settings: the broker URL (`relay`, `--relay`), the password file, the CA file and
/// the topic prefix, each with the error a person gets for a wrong value.
@Suite("relay configuration")
struct RelayConfigTests {
    @Test(arguments: [
        ("mqtts://devA@broker.example", true, "broker.example", 8883, "devA", nil),
        ("mqtts://devA@broker.example:8884", true, "broker.example", 8884, "devA", nil),
        ("mqtt://devA@10.0.0.2", false, "10.0.0.2", 1883, "devA", nil),
        ("MQTT://u%40x@[::1]:1999/", false, "::1", 1999, "u@x", nil),
        ("mqtts://devA:p%3Ass@broker.example", true, "broker.example", 8883, "devA", "p:ss"),
        ("mqtts://broker.example", true, "broker.example", 8883, nil, nil),
    ] as [(String, Bool, String, Int, String?, String?)])
    func aBrokerURLGivesTLSHostPortAndAccount(text: String, tls: Bool, host: String, port: Int, user: String?, password: String?) throws {
        let url = try RelayURL(parsing: text)
        #expect(url.useTLS == tls)
        #expect(url.host == host)
        #expect(url.port == port)
        #expect(url.username == user)
        #expect(url.password == password)
        #expect(!url.description.contains("p:ss") && !url.description.contains("p%3Ass"))
    }

    @Test(arguments: [
        ("https://broker.example", "must start with mqtts://"),
        ("mqtts://devA:secret@broker.example/topic", "no path"),
        ("mqtts://devA:secret@", "no broker host"),
        ("mqtts://devA@::1", "IPv6 broker address goes in brackets"),
        ("mqtts://devA@broker.example:99999", "port must be a number"),
    ])
    func aWrongURLSaysWhatIsWrongWithoutThePassword(text: String, expected: String) {
        #expect {
            try RelayURL(parsing: text)
        } throws: { error in
            let message = "\(error)"
            return message.contains(expected) && !message.contains("secret")
        }
    }

    @Test func theFileKeysAndTheFlagMakeTheSettings() throws {
        let text = """
            relay = "mqtts://devA@broker.example:8883"
            relay_password_file = "/etc/sessionmesh/relay.password"
            relay_ca_file = "/etc/sessionmesh/broker-ca.pem"
            relay_topic_prefix = "home/mesh/"
            """
        let file = try ConfigFile(parsing: text, fileName: "meshd.toml")
        let settings = try #require(try file.relay.settings(url: nil))
        #expect(settings.url == RelayURL(useTLS: true, host: "broker.example", port: 8883, username: "devA"))
        #expect(settings.passwordFile == "/etc/sessionmesh/relay.password")
        #expect(settings.caFile == "/etc/sessionmesh/broker-ca.pem")
        #expect(settings.topicPrefix == "home/mesh/")
        let flagged = try #require(try file.relay.settings(url: RelayURL(parsing: "mqtts://devB@other.example")))
        #expect(flagged.url.host == "other.example")
        #expect(flagged.topicPrefix == "home/mesh/")

        let bare = try ConfigFile(parsing: "relay = \"mqtt://devA@127.0.0.1\"", fileName: "meshd.toml")
        #expect(try bare.relay.settings(url: nil)?.topicPrefix == "sessionmesh/")
        #expect(try ConfigFile().relay.settings(url: nil) == nil)
    }

    @Test(arguments: [
        ("relay_topic_prefix = \"x/\"", "key 'relay_topic_prefix': is set but 'relay' is not"),
        ("relay = \"mqtt://a@h\"\nrelay_ca_file = \"/ca.pem\"", "key 'relay_ca_file': is set but the relay URL is mqtt://"),
        ("relay = \"mqtts://a@h\"\nrelay_topic_prefix = \"a/#/\"", "meshd.toml:2: key 'relay_topic_prefix': 'a/#/' is not a usable prefix: contains an MQTT wildcard"),
        ("relay = \"mqtts://a@h\"\nrelay_topic_prefix = \"mesh\"", "meshd.toml:2: key 'relay_topic_prefix': 'mesh' is not a usable prefix: does not end with /"),
        ("relay_password_file = \"relative\"", "meshd.toml:1: key 'relay_password_file': 'relative' must be an absolute path"),
        ("relay = 5", "meshd.toml:1: key 'relay': must be a quoted string"),
    ])
    func aWrongRelayKeyNamesTheKey(text: String, expected: String) {
        #expect {
            let file = try ConfigFile(parsing: text, fileName: "meshd.toml")
            _ = try file.relay.settings(url: nil)
        } throws: { error in
            "\(error)".contains(expected)
        }
    }

    @Test func theLoaderTakesTheRelayFlagOverTheFile() throws {
        let loader = ConfigurationLoader(environment: ["HOME": "/home/u"], workingDirectory: "/",
                                         readFile: { _ in "relay = \"mqtts://devA@file.example\"\n" })
        var overrides = ConfigurationLoader.Overrides()
        overrides.socketPath = "/tmp/s.sock"
        #expect(try loader.load(mode: .user, overrides: overrides).relay?.url.host == "file.example")
        overrides.relay = "mqtt://devB@flag.example:1884"
        let relay = try #require(try loader.load(mode: .user, overrides: overrides).relay)
        #expect(relay.url == RelayURL(useTLS: false, host: "flag.example", port: 1884, username: "devB"))
        overrides.relay = "ftp://x"
        #expect { try loader.load(mode: .user, overrides: overrides) } throws: { "\($0)".hasPrefix("--relay: must start with mqtts://") }
    }

    @Test func thePasswordFileIsReadOnlyWhenPrivateAndWithoutItsLineBreak() throws {
        let folder = try TemporaryFolder.make()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/relay.password"
        FileManager.default.createFile(atPath: path, contents: Data("s3cret\n".utf8), attributes: [.posixPermissions: 0o600])
        let password = try RelayPasswordFile.read(path)
        #expect(!password.isEmpty)
        #expect(password.withCString { String(cString: $0) } == "s3cret")

        chmod(path, 0o640)
        #expect { try RelayPasswordFile.read(path) } throws: { "\($0)".contains("has mode 640: group or others can access it; run chmod 600") }
        chmod(path, 0o600)
        symlink(path, folder + "/link")
        #expect { try RelayPasswordFile.read(folder + "/link") } throws: { "\($0)".contains("is a symbolic link") }
        FileManager.default.createFile(atPath: path, contents: Data("\n".utf8), attributes: [.posixPermissions: 0o600])
        #expect { try RelayPasswordFile.read(path) } throws: { "\($0)".contains("is empty") }
        FileManager.default.createFile(atPath: path, contents: Data("a\nb\n".utf8), attributes: [.posixPermissions: 0o600])
        #expect { try RelayPasswordFile.read(path) } throws: { "\($0)".contains("more than one line") }
        #expect { try RelayPasswordFile.read(folder + "/missing") } throws: { "\($0)".contains("cannot be opened: No such file") }
    }
}
