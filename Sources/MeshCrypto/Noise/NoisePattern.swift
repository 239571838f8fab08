/// One token of a Noise handshake pattern (spec §7).
enum NoiseToken: Sendable, Equatable {
    case e, s, ee, es, se, ss, psk
}

/// A Noise handshake pattern: pre-messages and message token lists (spec §7, §9, §18).
///
/// Messages alternate: even indices are written by the initiator, odd ones by the responder.
/// The base patterns live in a table (``NoisePattern/table``); `psk` modifiers are applied by
/// ``NoisePattern/named(_:)``.
struct NoisePattern: Sendable, Equatable {
    var initiatorPreMessage: [NoiseToken]
    var responderPreMessage: [NoiseToken]
    var messages: [[NoiseToken]]
    /// Whether any psk modifier is present (then `e` tokens also MixKey, spec §9.2).
    var usesPreSharedKeys: Bool { messages.contains { $0.contains(.psk) } }
    /// One-way patterns (N, K, X) have a single message; transport then runs one way only.
    var isOneWay: Bool { messages.count == 1 }

    private init(_ initiatorPre: [NoiseToken], _ responderPre: [NoiseToken], _ messages: [[NoiseToken]]) {
        self.initiatorPreMessage = initiatorPre
        self.responderPreMessage = responderPre
        self.messages = messages
    }

    /// The pattern for a name such as `IK`, `XXpsk3`, `NNpsk0+psk2` or `X1K1`, or `nil` when
    /// the base pattern or a modifier is not supported.
    static func named(_ name: String) -> NoisePattern? {
        let base: Substring
        var modifiers: [Substring] = []
        if let range = name.firstRange(of: "psk") {
            base = name[..<range.lowerBound]
            modifiers = name[range.lowerBound...].split(separator: "+", omittingEmptySubsequences: false)
        } else {
            base = Substring(name)
        }
        guard var pattern = table[String(base)] else { return nil }
        for modifier in modifiers {
            guard modifier.hasPrefix("psk"), let position = Int(modifier.dropFirst(3)),
                  String(position) == modifier.dropFirst(3), position <= pattern.messages.count
            else { return nil }
            if position == 0 {
                pattern.messages[0].insert(.psk, at: 0)
            } else {
                pattern.messages[position - 1].append(.psk)
            }
        }
        return pattern
    }

    /// The fundamental one-way (§7.4) and interactive (§7.5) patterns and the deferred
    /// patterns (§18.2).
    static let table: [String: NoisePattern] = [
        // One-way.
        "N": .init([], [.s], [[.e, .es]]),
        "K": .init([.s], [.s], [[.e, .es, .ss]]),
        "X": .init([], [.s], [[.e, .es, .s, .ss]]),
        // Interactive, fundamental.
        "NN": .init([], [], [[.e], [.e, .ee]]),
        "NK": .init([], [.s], [[.e, .es], [.e, .ee]]),
        "NX": .init([], [], [[.e], [.e, .ee, .s, .es]]),
        "XN": .init([], [], [[.e], [.e, .ee], [.s, .se]]),
        "XK": .init([], [.s], [[.e, .es], [.e, .ee], [.s, .se]]),
        "XX": .init([], [], [[.e], [.e, .ee, .s, .es], [.s, .se]]),
        "KN": .init([.s], [], [[.e], [.e, .ee, .se]]),
        "KK": .init([.s], [.s], [[.e, .es, .ss], [.e, .ee, .se]]),
        "KX": .init([.s], [], [[.e], [.e, .ee, .se, .s, .es]]),
        "IN": .init([], [], [[.e, .s], [.e, .ee, .se]]),
        "IK": .init([], [.s], [[.e, .es, .s, .ss], [.e, .ee, .se]]),
        "IX": .init([], [], [[.e, .s], [.e, .ee, .se, .s, .es]]),
        // Interactive, deferred.
        "NK1": .init([], [.s], [[.e], [.e, .ee, .es]]),
        "NX1": .init([], [], [[.e], [.e, .ee, .s], [.es]]),
        "X1N": .init([], [], [[.e], [.e, .ee], [.s], [.se]]),
        "X1K": .init([], [.s], [[.e, .es], [.e, .ee], [.s], [.se]]),
        "XK1": .init([], [.s], [[.e], [.e, .ee, .es], [.s, .se]]),
        "X1K1": .init([], [.s], [[.e], [.e, .ee, .es], [.s], [.se]]),
        "X1X": .init([], [], [[.e], [.e, .ee, .s, .es], [.s], [.se]]),
        "XX1": .init([], [], [[.e], [.e, .ee, .s], [.es, .s, .se]]),
        "X1X1": .init([], [], [[.e], [.e, .ee, .s], [.es, .s], [.se]]),
        "K1N": .init([.s], [], [[.e], [.e, .ee], [.se]]),
        "K1K": .init([.s], [.s], [[.e, .es], [.e, .ee], [.se]]),
        "KK1": .init([.s], [.s], [[.e], [.e, .ee, .se, .es]]),
        "K1K1": .init([.s], [.s], [[.e], [.e, .ee, .es], [.se]]),
        "K1X": .init([.s], [], [[.e], [.e, .ee, .s, .es], [.se]]),
        "KX1": .init([.s], [], [[.e], [.e, .ee, .se, .s], [.es]]),
        "K1X1": .init([.s], [], [[.e], [.e, .ee, .s], [.se, .es]]),
        "I1N": .init([], [], [[.e, .s], [.e, .ee], [.se]]),
        "I1K": .init([], [.s], [[.e, .es, .s], [.e, .ee], [.se]]),
        "IK1": .init([], [.s], [[.e, .s], [.e, .ee, .se, .es]]),
        "I1K1": .init([], [.s], [[.e, .s], [.e, .ee, .es], [.se]]),
        "I1X": .init([], [], [[.e, .s], [.e, .ee, .s, .es], [.se]]),
        "IX1": .init([], [], [[.e, .s], [.e, .ee, .se, .s], [.es]]),
        "I1X1": .init([], [], [[.e, .s], [.e, .ee, .s], [.se, .es]]),
    ]
}
