import CMosquitto

/// Where libmosquitto's callbacks leave what happened during one call into it (`loop_read`,
/// `loop_write`, `loop_misc`, `connect`). The client reads and empties it after the call returns,
/// so nothing runs inside a callback but these assignments, and nothing calls back into
/// libmosquitto from one.
final class MosquittoCallbackBox {
    /// The CONNACK's reason code, when one arrived.
    var connack: Int32?
    /// The CONNACK's session-present flag.
    var sessionPresent = false
    /// PUBACKs received (QoS 1 messages the broker took).
    var acknowledgedPublishes: UInt64 = 0
    /// The code the connection ended with, when it ended.
    var disconnect: Int32?
    /// SUBACKs that arrived: the SUBSCRIBE's message ID, and whether the broker granted it (a
    /// granted QoS below 0x80).
    var subscribeAcks: [(messageID: Int32, granted: Bool)] = []
    /// Messages that arrived, in order.
    var messages: [MQTTMessage] = []
    /// Messages dropped on arrival because they were larger than allowed.
    var oversized = 0
    /// The most recent error or warning libmosquitto logged (e.g. OpenSSL's reason).
    var lastLog: String?
    /// Payloads above this are dropped.
    let maximumPayloadBytes: Int

    init(maximumPayloadBytes: Int) {
        self.maximumPayloadBytes = maximumPayloadBytes
    }

    /// Registers the callbacks on `handle`, with this box as their user data. The box must live
    /// as long as the handle: the client holds both and destroys the handle first.
    func install(on handle: OpaquePointer) {
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_connect_v5_callback_set(handle) { _, user, reason, flags, _ in
            MosquittoCallbackBox.from(user)?.connack = reason
            MosquittoCallbackBox.from(user)?.sessionPresent = flags & 1 != 0
        }
        mosquitto_publish_v5_callback_set(handle) { _, user, _, reason, _ in
            // Reason codes 0x80 and above are refusals (MQTT 5); 3.1.1 has no reason code (0).
            if reason < 0x80 { MosquittoCallbackBox.from(user)?.acknowledgedPublishes &+= 1 }
        }
        mosquitto_subscribe_v5_callback_set(handle) { _, user, messageID, count, granted, _ in
            // One topic per SUBSCRIBE: the first granted QoS is its answer (0x80 and above refuse).
            let ok = count >= 1 && (granted.map { $0[0] < 0x80 } ?? false)
            MosquittoCallbackBox.from(user)?.subscribeAcks.append((messageID, ok))
        }
        mosquitto_disconnect_v5_callback_set(handle) { _, user, code, _ in
            MosquittoCallbackBox.from(user)?.disconnect = code
        }
        mosquitto_message_v5_callback_set(handle) { _, user, message, _ in
            guard let box = MosquittoCallbackBox.from(user), let message, let topic = message.pointee.topic else { return }
            let length = Int(message.pointee.payloadlen)
            guard length >= 0, length <= box.maximumPayloadBytes else {
                box.oversized += 1
                return
            }
            let payload: [UInt8]
            if length > 0, let bytes = message.pointee.payload {
                payload = Array(UnsafeRawBufferPointer(start: bytes, count: length))
            } else {
                payload = []
            }
            box.messages.append(MQTTMessage(topic: String(cString: topic), payload: payload))
        }
        mosquitto_log_callback_set(handle) { _, user, level, text in
            guard let box = MosquittoCallbackBox.from(user), let text else { return }
            if level & Int32(MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0 {
                box.lastLog = String(String(cString: text).prefix(200))
            }
        }
    }

    private static func from(_ user: UnsafeMutableRawPointer?) -> MosquittoCallbackBox? {
        guard let user else { return nil }
        return Unmanaged<MosquittoCallbackBox>.fromOpaque(user).takeUnretainedValue()
    }
}
