@testable import MeshCrypto
@testable import MeshDaemon

// libFuzzer harness `pairmsg`: the four pairing messages from the network, and the inviter's and
// joiner's state machines fed with them.
//
// The first byte picks a mode:
//   0: the rest goes to each message decoder (hello, inviter confirmation, joiner confirmation,
//      inviter identity); a decoded message must encode back to exactly the input.
//   1: records of the rest are the joiner's messages to a `PairingResponder` (inviter side)
//      holding a fixed code, one after the other, until it finishes or refuses.
//   2: the same for the inviter's messages to a started `PairingJoiner`.
// Every refusal must be a `PairingError`; nothing may crash.
func fuzzPairingMessages(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    switch input.byte() % 3 {
    case 0:
        let message = input.rest()
        if let hello = try? PairingHello(decoding: message), hello.encoded() != message {
            fuzzFailure("hello does not encode back to its input")
        }
        if let reply = try? PairingInviterConfirmation(decoding: message), reply.encoded() != message {
            fuzzFailure("inviter confirmation does not encode back to its input")
        }
        if let confirmation = try? PairingJoinerConfirmation(decoding: message), confirmation.encoded() != message {
            fuzzFailure("joiner confirmation does not encode back to its input")
        }
        if let identity = try? PairingInviterIdentity(decoding: message), identity.encoded() != message {
            fuzzFailure("inviter identity does not encode back to its input")
        }
    case 1:
        var responder = PairingResponder(code: FuzzPairingFixtures.code, identity: FuzzPairingFixtures.inviter)
        while !input.isEmpty {
            do {
                if case .finished = try responder.receive(input.record()) { return }
            } catch is PairingError {
                return
            } catch {
                fuzzFailure("the responder threw \(type(of: error)), not a PairingError")
            }
        }
    default:
        guard var joiner = try? PairingJoiner(code: FuzzPairingFixtures.code, identity: FuzzPairingFixtures.joiner),
              (try? joiner.start()) != nil else { fuzzFailure("fixture joiner") }
        while !input.isEmpty {
            do {
                if case .finished = try joiner.receive(input.record()) { return }
            } catch is PairingError {
                return
            } catch {
                fuzzFailure("the joiner threw \(type(of: error)), not a PairingError")
            }
        }
    }
}

enum FuzzPairingFixtures {
    static let code: PairingCode = {
        guard let code = try? PairingCode.parse(FuzzPairingFixtures.codeText) else { fuzzFailure("fixture code") }
        return code
    }()
    static let codeText = "3MH4-KX97"
    static let inviter = identity(0x51, name: "inviter")
    static let joiner = identity(0x52, name: "joiner")

    static func identity(_ fill: UInt8, name: String) -> PairingLocalIdentity {
        guard let pair = try? X25519KeyPair(privateKey: SecretBytes([UInt8](repeating: fill, count: 32))) else {
            fuzzFailure("fixture key")
        }
        return PairingLocalIdentity(keyPair: pair, name: name)
    }
}
