import CMosquitto
#if canImport(Glibc)
import Glibc
#endif

/// The libmosquitto client object. Every call into the library goes through this type, on the
/// owner's event loop; no pointer or return code leaves the module.
final class MosquittoHandle {
    private let pointer: OpaquePointer
    private let box: MosquittoCallbackBox

    /// The library's process-wide set-up (OpenSSL, the TLS callbacks' index), done once.
    private static let library: Int32 = mosquitto_lib_init()

    init(clientID: String, cleanSession: Bool, box: MosquittoCallbackBox) throws(MQTTFailure) {
        _ = Self.library
        guard let pointer = mosquitto_new(clientID, cleanSession, nil) else {
            throw MQTTFailure(.refused, "cannot create the MQTT client: \(String(cString: strerror(errno)))")
        }
        self.pointer = pointer
        self.box = box
        box.install(on: pointer)
        _ = mosquitto_int_option(pointer, MOSQ_OPT_TCP_NODELAY, 1)
    }

    deinit { mosquitto_destroy(pointer) }

    /// Account, password (copied by libmosquitto) and TLS with verification.
    func configure(_ options: MQTTClientOptions, password: MQTTPassword?) -> MQTTFailure? {
        if options.username != nil || password != nil {
            let code: Int32
            if let password, !password.isEmpty {
                code = password.withCString { mosquitto_username_pw_set(pointer, options.username, $0) }
            } else {
                code = mosquitto_username_pw_set(pointer, options.username, nil)
            }
            guard code == MosquittoCode.success.raw else {
                return MQTTFailure(.refused, "the relay account name is not usable: \(MosquittoCode(raw: code).words)")
            }
        }
        guard options.useTLS else { return nil }
        if options.caFile == nil {
            _ = mosquitto_int_option(pointer, MOSQ_OPT_TLS_USE_OS_CERTS, 1)
        }
        let code = mosquitto_tls_set(pointer, options.caFile, options.caFile == nil ? "/etc/ssl/certs" : nil, nil, nil, nil)
        guard code == MosquittoCode.success.raw else {
            return MQTTFailure(.tlsFailed, "cannot use the CA file \(options.caFile ?? "(system)"): \(MosquittoCode(raw: code).words)")
        }
        _ = mosquitto_tls_insecure_set(pointer, false)
        return nil
    }

    func offer(_ version: MQTTProtocolVersion) {
        _ = mosquitto_int_option(pointer, MOSQ_OPT_PROTOCOL_VERSION, version.level)
    }

    func connect(host: String, port: Int, keepalive: Int) -> MosquittoCode {
        MosquittoCode(raw: mosquitto_connect_async(pointer, host, Int32(port), Int32(keepalive)))
    }

    func disconnect() -> MosquittoCode { MosquittoCode(raw: mosquitto_disconnect(pointer)) }

    func loopRead() -> MosquittoCode { MosquittoCode(raw: mosquitto_loop_read(pointer, 1)) }
    func loopWrite() -> MosquittoCode { MosquittoCode(raw: mosquitto_loop_write(pointer, 1)) }
    func loopMisc() -> MosquittoCode { MosquittoCode(raw: mosquitto_loop_misc(pointer)) }

    /// The socket libmosquitto has open, if any.
    var socket: Int32? {
        let descriptor = mosquitto_socket(pointer)
        return descriptor >= 0 ? descriptor : nil
    }

    var wantsWrite: Bool { mosquitto_want_write(pointer) }

    /// Ends the connection at once (a connection attempt that took too long): the next read
    /// sees the end and libmosquitto closes its socket.
    func abort() {
        if let socket { _ = shutdown(socket, Int32(SHUT_RDWR)) }
    }

    /// Sends SUBSCRIBE; the message ID its SUBACK will carry, when libmosquitto took it.
    func subscribe(_ topic: String, qos: MQTTQoS) -> (MosquittoCode, messageID: Int32?) {
        var messageID: Int32 = 0
        let code = MosquittoCode(raw: mosquitto_subscribe(pointer, &messageID, topic, qos.rawValue))
        return (code, code.isSuccess ? messageID : nil)
    }

    func unsubscribe(_ topic: String) -> MosquittoCode {
        MosquittoCode(raw: mosquitto_unsubscribe(pointer, nil, topic))
    }

    /// Publishes `payload`; under MQTT 5 with a message expiry when `expirySeconds` is given.
    func publish(topic: String, payload: UnsafeRawBufferPointer, qos: MQTTQoS, expirySeconds: UInt32?, retain: Bool = false,
                 version: MQTTProtocolVersion) -> MosquittoCode {
        var properties: OpaquePointer? = nil
        defer { mosquitto_property_free_all(&properties) }
        if version == .v5, let expirySeconds {
            _ = mosquitto_property_add_int32(&properties, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), expirySeconds)
        }
        return MosquittoCode(raw: mosquitto_publish_v5(pointer, nil, topic, Int32(payload.count), payload.baseAddress,
                                                       qos.rawValue, retain, properties))
    }
}
