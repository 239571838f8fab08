import CMosquitto
#if canImport(Glibc)
import Glibc
#endif

/// A libmosquitto return code, kept inside this module: callers see ``MQTTFailure`` instead.
struct MosquittoCode: Equatable {
    var raw: Int32

    static let success = MosquittoCode(raw: Int32(MOSQ_ERR_SUCCESS.rawValue))

    var isSuccess: Bool { raw == Self.success.raw }

    /// libmosquitto's own words for the code.
    var words: String { String(cString: mosquitto_strerror(raw)) }

    /// The failure this code stands for, `errno` read right after the call that returned it.
    func failure(endpoint: String, errno code: Int32, lastLog: String?) -> MQTTFailure {
        let log = lastLog.map { " (\($0))" } ?? ""
        switch Int(raw) {
        case Int(MOSQ_ERR_TLS.rawValue), Int(MOSQ_ERR_TLS_HANDSHAKE.rawValue), Int(MOSQ_ERR_OCSP.rawValue):
            return MQTTFailure(.tlsFailed, "TLS with \(endpoint) failed\(log); check relay_ca_file and that the broker's certificate names this host")
        case Int(MOSQ_ERR_AUTH.rawValue), Int(MOSQ_ERR_CONN_REFUSED.rawValue):
            return MQTTFailure(.authRefused, "\(endpoint) refused the account")
        case Int(MOSQ_ERR_EAI.rawValue), Int(MOSQ_ERR_LOOKUP.rawValue):
            return MQTTFailure(.unreachable, "cannot resolve the broker's name in \(endpoint)")
        case Int(MOSQ_ERR_ERRNO.rawValue):
            if code == ECONNREFUSED {
                return MQTTFailure(.unreachable, "connection refused by \(endpoint); is the broker running on that port?")
            }
            if code == 0 {
                return MQTTFailure(.unreachable, "\(endpoint) closed the connection")
            }
            return MQTTFailure(.unreachable, "cannot reach \(endpoint): \(String(cString: strerror(code)))")
        case Int(MOSQ_ERR_CONN_LOST.rawValue), Int(MOSQ_ERR_NO_CONN.rawValue):
            return MQTTFailure(.unreachable, "\(endpoint) closed the connection")
        case Int(MOSQ_ERR_KEEPALIVE.rawValue):
            return MQTTFailure(.unreachable, "\(endpoint) stopped answering keepalives")
        case Int(MOSQ_ERR_PROTOCOL.rawValue), Int(MOSQ_ERR_MALFORMED_PACKET.rawValue):
            return MQTTFailure(.protocolRefused, "\(endpoint) broke the MQTT protocol: \(words)")
        default:
            return MQTTFailure(.refused, "\(endpoint): \(words)\(log)")
        }
    }

    /// The failure a CONNACK reason code stands for (MQTT 5 reason codes and 3.1.1 return codes).
    static func connackFailure(_ reason: Int32, endpoint: String) -> MQTTFailure {
        switch reason {
        case 4, 5, Int32(MQTT_RC_BAD_USERNAME_OR_PASSWORD.rawValue), Int32(MQTT_RC_NOT_AUTHORIZED.rawValue),
             Int32(MQTT_RC_BANNED.rawValue), Int32(MQTT_RC_BAD_AUTHENTICATION_METHOD.rawValue):
            return MQTTFailure(.authRefused, "\(endpoint) refused the account: \(String(cString: mosquitto_reason_string(reason)))")
        case 1, Int32(MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION.rawValue):
            return MQTTFailure(.protocolRefused, "\(endpoint) does not accept this MQTT version")
        case 3, Int32(MQTT_RC_SERVER_UNAVAILABLE.rawValue), Int32(MQTT_RC_SERVER_BUSY.rawValue):
            return MQTTFailure(.unreachable, "\(endpoint) is unavailable or busy")
        default:
            return MQTTFailure(.refused, "\(endpoint) refused the connection: \(String(cString: mosquitto_reason_string(reason)))")
        }
    }
}
