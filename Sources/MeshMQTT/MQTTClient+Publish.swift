import NIOCore

extension MQTTClient {
    /// Subscribes to `topic` now if connected, and again on every later connection.
    public func subscribe(_ topic: String, qos: MQTTQoS) {
        eventLoop.preconditionInEventLoop()
        guard !topics.contains(where: { $0.topic == topic }) else { return }
        topics.append((topic, qos))
        if isConnected {
            sendSubscribe(topic, qos: qos)
            afterCall()
        }
    }

    /// Stops receiving `topic`.
    public func unsubscribe(_ topic: String) {
        eventLoop.preconditionInEventLoop()
        guard let index = topics.firstIndex(where: { $0.topic == topic }) else { return }
        topics.remove(at: index)
        confirmedSubscriptions.remove(topic)
        if isConnected {
            _ = handle.unsubscribe(topic)
            afterCall()
        }
    }

    /// The topics it subscribes to on each connection.
    public var subscriptions: [String] { topics.map(\.topic) }

    /// Whether the broker confirmed the subscription to `topic` on the connection that is up
    /// (a `.subscribed` event said so).
    public func isSubscribed(_ topic: String) -> Bool { confirmedSubscriptions.contains(topic) }

    /// Publishes `payload` on `topic`. Under MQTT 5, `expirySeconds` makes the broker drop the
    /// message if it cannot deliver it in time; 3.1.1 has no expiry. With `retain` the broker
    /// keeps it as the topic's last message and hands it to later subscribers (an empty
    /// payload clears it).
    ///
    /// Throws when no connection is up (nothing is queued for later) or libmosquitto refuses.
    public func publish(topic: String, payload: UnsafeRawBufferPointer, qos: MQTTQoS,
                        expirySeconds: UInt32? = nil, retain: Bool = false) throws(MQTTFailure) {
        eventLoop.preconditionInEventLoop()
        guard case .connected(let version) = phase else {
            throw MQTTFailure(.unreachable, "not connected to \(options.endpoint)")
        }
        let code = handle.publish(topic: topic, payload: payload, qos: qos, expirySeconds: expirySeconds, retain: retain,
                                  version: version)
        guard code.isSuccess else {
            let failure = code.failure(endpoint: options.endpoint, errno: 0, lastLog: box.lastLog)
            afterCall()
            throw failure
        }
        afterCall()
    }

    /// Publishes the bytes of `payload`; see ``publish(topic:payload:qos:expirySeconds:)-(_,UnsafeRawBufferPointer,_,_)``.
    public func publish(topic: String, payload: [UInt8], qos: MQTTQoS, expirySeconds: UInt32? = nil) throws(MQTTFailure) {
        let failure: MQTTFailure? = payload.withUnsafeBytes { buffer in
            do throws(MQTTFailure) {
                try publish(topic: topic, payload: buffer, qos: qos, expirySeconds: expirySeconds)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }
}
