/// The MQTT protocol versions the client speaks: 5 where the broker offers it, else 3.1.1.
public enum MQTTProtocolVersion: Sendable, Equatable, CaseIterable {
    /// MQTT 5.0: message expiry and reason codes.
    case v5
    /// MQTT 3.1.1: no message expiry; the fallback for brokers without MQTT 5.
    case v311

    /// The version in words, as `meshctl status` shows it.
    public var words: String {
        switch self {
        case .v5: "MQTT 5"
        case .v311: "MQTT 3.1.1"
        }
    }

    /// The protocol level libmosquitto takes.
    var level: Int32 {
        switch self {
        case .v5: 5
        case .v311: 4
        }
    }
}

/// How hard the broker tries to deliver one message.
public enum MQTTQoS: Int32, Sendable, Equatable {
    /// QoS 0: sent once, lost if the broker or a link drops it (realtime datagrams).
    case atMostOnce = 0
    /// QoS 1: acknowledged hop by hop and resent until it is (stream frames).
    case atLeastOnce = 1
}

/// One message the broker delivered on a subscribed topic.
public struct MQTTMessage: Sendable, Equatable {
    /// The topic it was published on.
    public var topic: String
    /// Its payload, as published.
    public var payload: [UInt8]

    /// Creates a message.
    public init(topic: String, payload: [UInt8]) {
        self.topic = topic
        self.payload = payload
    }
}
