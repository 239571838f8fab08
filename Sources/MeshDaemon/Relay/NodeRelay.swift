import Foundation
import Logging
import MeshCore
import MeshMQTT
import NIOCore

/// The node's relay component: the broker link (created on the node's loop when the node runs)
/// and its state for `meshctl status`. Nil in a node without `relay` configured.
final class NodeRelay {
    let settings: RelaySettings
    private var password: MQTTPassword?
    private(set) var link: RelayBrokerLink?
    private let logger: Logger

    /// Reads the password file now, so a bad one stops start-up with a clear error.
    init(settings: RelaySettings, logger: Logger) throws(ConfigurationError) {
        self.settings = settings
        self.logger = logger
        if let file = settings.passwordFile {
            password = try RelayPasswordFile.read(file)
        } else if let inline = settings.url.password {
            var bytes = Array(inline.utf8)
            password = MQTTPassword(taking: &bytes)
        }
    }

    /// Connects to the broker and keeps the connection up; on the node's loop.
    func start(loop: any EventLoop, clock: any MeshClock) throws(MQTTFailure) {
        loop.preconditionInEventLoop()
        guard link == nil else { return }
        var random = SystemRandomNumberGenerator()
        // A random client identifier per start: the broker learns nothing that names the device.
        let clientID = "sm-" + (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &random)) }.joined()
        let link = try RelayBrokerLink(settings: settings, password: password, clientID: clientID, eventLoop: loop,
                                       clock: clock, logger: logger)
        password = nil
        self.link = link
        link.start()
    }

    /// Disconnects; on the node's loop.
    func stop() {
        link?.stop()
        password?.zero()
        password = nil
    }

    /// The broker's state; before the node runs, "connecting".
    func status(clock: any MeshClock) -> RelayStatus {
        link?.status() ?? RelayStatus(url: settings.url.description, host: settings.url.host, state: "connecting",
                                      since: clock.wallSeconds())
    }
}

extension MeshNode {
    /// Starts the relay broker link, if one is configured (`run()`).
    func startRelay() throws {
        do throws(MQTTFailure) {
            try relay?.start(loop: loop, clock: clock)
        } catch {
            throw NodeError(code: .relay, message: "cannot start the relay client: \(error)")
        }
    }
}
