import NIOCore
#if canImport(Glibc)
import Glibc
#endif

extension MQTTClient {
    /// Starts one connection attempt offering `version`; the outcome arrives as an event
    /// (`.connected` or `.disconnected`), possibly before this returns (a refused port).
    public func connect(offering version: MQTTProtocolVersion) {
        eventLoop.preconditionInEventLoop()
        guard phase == .idle else { return }
        handle.offer(version)
        box.connack = nil
        box.disconnect = nil
        box.lastLog = nil
        box.subscribeAcks.removeAll()
        phase = .connecting(version)
        let code = handle.connect(host: options.host, port: options.port, keepalive: options.keepaliveSeconds)
        let error = errno
        guard code.isSuccess else {
            end(code.failure(endpoint: options.endpoint, errno: error, lastLog: box.lastLog))
            return
        }
        startTimers()
        afterCall()
    }

    /// Ends the connection politely (DISCONNECT); no event follows.
    public func disconnect() {
        eventLoop.preconditionInEventLoop()
        switch phase {
        case .connected:
            _ = handle.disconnect()
            box.disconnect = nil
            drainMessages()
        case .connecting:
            handle.abort()
            _ = handle.loopRead()
        case .idle, .closed:
            return
        }
        stopTimers()
        phase = .idle
        pendingSubscriptions.removeAll()
        confirmedSubscriptions.removeAll()
        watcher?.watch(nil)
    }

    /// The watcher saw the socket ready.
    func socketReady(_ readiness: SocketReadinessWatcher.Readiness) {
        guard phase != .idle, phase != .closed else { return }
        var code = MosquittoCode.success
        if readiness.readable { code = handle.loopRead() }
        if code.isSuccess, readiness.writable, handle.socket != nil { code = handle.loopWrite() }
        let error = errno
        if !code.isSuccess, box.disconnect == nil { box.disconnect = code.raw }
        afterCall(errno: error)
    }

    /// Reads what the callbacks left in the box and acts on it, then watches the socket again.
    func afterCall(errno error: Int32 = 0) {
        if let reason = box.connack {
            box.connack = nil
            if case .connecting(let version) = phase {
                if reason == 0 {
                    sessionPresent = box.sessionPresent
                    connected(version)
                } else {
                    box.disconnect = nil
                    end(MosquittoCode.connackFailure(reason, endpoint: options.endpoint))
                    return
                }
            }
        }
        drainMessages()
        if let code = box.disconnect {
            box.disconnect = nil
            end(MosquittoCode(raw: code).failure(endpoint: options.endpoint, errno: error, lastLog: box.lastLog))
            return
        }
        guard phase != .idle, phase != .closed else { return }
        guard let socket = handle.socket else {
            end(MQTTFailure(.unreachable, "\(options.endpoint) closed the connection"))
            return
        }
        watcher?.watch(.init(descriptor: socket, write: handle.wantsWrite))
    }

    /// Sends SUBSCRIBE for `topic` and remembers its message ID for the SUBACK.
    func sendSubscribe(_ topic: String, qos: MQTTQoS) {
        let (_, messageID) = handle.subscribe(topic, qos: qos)
        if let messageID { pendingSubscriptions[messageID] = topic }
    }

    private func connected(_ version: MQTTProtocolVersion) {
        connectDeadline?.cancel()
        connectDeadline = nil
        phase = .connected(version)
        logger.info("relay broker connected", metadata: ["broker": "\(options.endpoint)", "mqtt": "\(version.words)"])
        pendingSubscriptions.removeAll()
        confirmedSubscriptions.removeAll()
        for entry in topics { sendSubscribe(entry.topic, qos: entry.qos) }
        onEvent(.connected(version))
    }

    /// The attempt or the connection is over: stop watching and say why.
    func end(_ failure: MQTTFailure) {
        let wasConnected = isConnected
        stopTimers()
        if handle.socket != nil { _ = handle.disconnect() }
        phase = .idle
        watcher?.watch(nil)
        pendingSubscriptions.removeAll()
        confirmedSubscriptions.removeAll()
        logger.debug("relay broker connection ended", metadata: [
            "broker": "\(options.endpoint)", "state": "\(failure.words)", "detail": "\(failure.detail)",
            "was_connected": "\(wasConnected)",
        ])
        onEvent(.disconnected(failure))
    }

    func drainMessages() {
        acknowledgedPublishes = box.acknowledgedPublishes
        if box.oversized > 0 {
            oversizedMessages += box.oversized
            box.oversized = 0
        }
        if !box.subscribeAcks.isEmpty {
            let acks = box.subscribeAcks
            box.subscribeAcks.removeAll()
            for ack in acks {
                guard let topic = pendingSubscriptions.removeValue(forKey: ack.messageID), ack.granted, isConnected,
                      topics.contains(where: { $0.topic == topic }) else { continue }
                confirmedSubscriptions.insert(topic)
                onEvent(.subscribed(topic))
            }
        }
        guard !box.messages.isEmpty else { return }
        let messages = box.messages
        box.messages.removeAll(keepingCapacity: true)
        for message in messages where isConnected { onEvent(.message(message)) }
    }

    private func startTimers() {
        let bound = NIOLoopBound(WeakClient(self), eventLoop: eventLoop)
        misc = eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            bound.value.client?.miscTick()
        }
        let timeout = TimeAmount.nanoseconds(Int64(options.connectTimeoutSeconds * 1e9))
        connectDeadline = eventLoop.scheduleTask(in: timeout) {
            bound.value.client?.connectTimedOut()
        }
    }

    func stopTimers() {
        misc?.cancel()
        misc = nil
        connectDeadline?.cancel()
        connectDeadline = nil
    }

    private func miscTick() {
        guard phase != .idle, phase != .closed else { return }
        let code = handle.loopMisc()
        let error = errno
        if !code.isSuccess, box.disconnect == nil, handle.socket == nil { box.disconnect = code.raw }
        afterCall(errno: error)
    }

    private func connectTimedOut() {
        guard case .connecting = phase else { return }
        handle.abort()
        _ = handle.loopRead()
        box.disconnect = nil
        box.connack = nil
        end(MQTTFailure(.unreachable, "\(options.endpoint) did not complete the connection within \(options.connectTimeoutSeconds) s"))
    }
}
