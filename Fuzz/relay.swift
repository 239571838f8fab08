@testable import MeshCrypto
@testable import MeshDaemon

// libFuzzer harness: relay messages (RelayEnvelope), the per-peer relay receiver and mailbox boxes.
//
// Input layout: the first byte picks a mode.
//   even: the rest is one relay message to RelayEnvelope(decoding:) and one mailbox box to
//         MailboxSeal.open; a decoded message must encode back to the input minus its padding.
//   odd:  the rest is records `len u8 | bytes`, each one MQTT message to a RelayReceiver with
//         small limits; its state must stay within them, and its actions must be consistent
//         (bytes and closes only for paths it opened, nothing for a path after it closed).
func fuzzRelay(_ bytes: [UInt8]) {
    guard let mode = bytes.first else { return }
    let rest = Array(bytes.dropFirst())
    if mode & 1 == 0 {
        if let envelope = try? RelayEnvelope(decoding: rest) {
            guard let encoded = envelope.encode(), rest.starts(with: encoded),
                  rest.dropFirst(encoded.count).allSatisfy({ $0 == 0 }),
                  (try? RelayEnvelope(decoding: encoded)) == envelope else {
                fatalError("a decoded relay message does not encode back to its input")
            }
        }
        if FuzzRelayKeys.seal.open(rest) != nil { fatalError("a mailbox box opened from fuzz input") }
        return
    }
    let limits = RelayReceiver.Limits(maximumPaths: 3, window: 8, maximumBufferedBytes: 512, rememberedClosedPaths: 4)
    var receiver = RelayReceiver(limits: limits)
    var open = Set<RelayPathID>()
    var index = 0
    while index < rest.count {
        let length = Int(rest[index])
        let message = Array(rest[(index + 1)..<min(index + 1 + length, rest.count)])
        index += 1 + length
        for action in receiver.receive(message) {
            switch action {
            case .opened(let path):
                if !open.insert(path).inserted { fatalError("relay path \(path) opened twice") }
            case .streamData(let path, let data):
                if !open.contains(path) || data.isEmpty { fatalError("relay bytes for a path not open, or empty") }
            case .closed(let path, _):
                if open.remove(path) == nil { fatalError("relay close for a path not open") }
            case .datagram, .mailboxItem, .mailboxAck, .mailboxSnapshot:
                break
            }
        }
        let held = receiver.paths.values.reduce(0) { $0 + $1.held.values.reduce(0) { $0 + $1.payload.count } }
        if receiver.paths.count > limits.maximumPaths || receiver.bufferedBytes > limits.maximumBufferedBytes
            || receiver.bufferedBytes != held || !open.isSubset(of: Set(receiver.paths.keys)) {
            fatalError("relay receiver state out of its limits")
        }
    }
}

/// A fixed pair for the mailbox-box mode.
enum FuzzRelayKeys {
    static let seal: MailboxSeal = {
        guard let own = try? X25519KeyPair(privateKey: SecretBytes(Array(1...32))),
              let peer = try? X25519KeyPair(privateKey: SecretBytes(Array(33...64))),
              let seal = MailboxSeal(identity: own, peerPublicKey: peer.publicKey, pairKey: SecretBytes(Array(0..<32))) else {
            fatalError("fixed fuzz keys")
        }
        return seal
    }()
}
