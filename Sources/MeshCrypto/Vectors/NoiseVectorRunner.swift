/// Runs Noise test vectors (cacophony `protocol_name` format or noise-c `name` format) against
/// ``NoiseHandshake`` and ``NoiseCipherState``.
///
/// For each vector both sides are built from the given keys; every message is written by its
/// sender and compared with the expected ciphertext, then read by the other side and compared
/// with the payload; the handshake hash is compared when given; messages after the handshake go
/// through the split cipher states.
public enum NoiseVectorRunner {
    /// Runs every vector in `fileContents` (the bytes of a JSON file).
    /// Throws ``CryptoError/Code/invalidVectorFile`` when the file itself cannot be understood.
    public static func run(fileContents: [UInt8]) throws -> VectorReport {
        var report = VectorReport()
        for (index, vector) in try VectorFile.objects(fileContents, allowSingle: false).enumerated() {
            let name = protocolName(vector) ?? "vector \(index + 1)"
            let label = "#\(index + 1) \(name)"
            // Noise Pipes (fallback) and hybrid forward secrecy (`hybrid`) are not implemented;
            // running such a vector as its plain pattern would report a bogus mismatch (or pass).
            if (vector["fallback"] as? Bool) == true || VectorFile.value(vector, "fallback_pattern") != nil
                || VectorFile.value(vector, "hybrid") != nil {
                record(unsupported: name, in: &report)
                continue
            }
            let expectFailure = (vector["fail"] as? Bool) == true
            do {
                let mismatch = try runVector(vector, name: name)
                switch (mismatch, expectFailure) {
                case (nil, false): report.passed += 1
                case (let problem?, false): fail("\(label): \(problem)", &report)
                case (nil, true): fail("\(label): expected a failure, but every message matched", &report)
                case (_?, true): report.passed += 1
                }
            } catch let error as CryptoError where error.code == .unsupportedProtocol {
                record(unsupported: name, in: &report)
            } catch {
                if expectFailure { report.passed += 1 } else { fail("\(label): \(error)", &report) }
            }
        }
        return report
    }

    private static func fail(_ line: String, _ report: inout VectorReport) {
        report.failed += 1
        report.failures.append(line)
    }

    private static func record(unsupported name: String, in report: inout VectorReport) {
        report.unsupported += 1
        if !report.unsupportedProtocols.contains(name) { report.unsupportedProtocols.append(name) }
    }

    /// `protocol_name`, or noise-c's `name`, or noise-c's split fields.
    static func protocolName(_ vector: [String: Any]) -> String? {
        if let name = vector["protocol_name"] as? String { return name }
        if let name = vector["name"] as? String, name.hasPrefix("Noise") { return name }
        if let pattern = vector["pattern"] as? String, let dh = vector["dh"] as? String,
           let cipher = vector["cipher"] as? String, let hash = vector["hash"] as? String {
            return "Noise_\(pattern)_\(dh)_\(cipher)_\(hash)"
        }
        return vector["name"] as? String
    }

    private static func keyPair(_ vector: [String: Any], _ key: String) throws -> X25519KeyPair? {
        try VectorFile.hex(vector, key).map { try X25519KeyPair(privateKey: SecretBytes($0)) }
    }

    private static func handshake(_ vector: [String: Any], name: String, initiator: Bool) throws -> NoiseHandshake {
        let side = initiator ? "init_" : "resp_"
        let psks = try VectorFile.hexList(vector, side + "psks") ?? VectorFile.hexList(vector, side + "psk") ?? []
        return try NoiseHandshake(protocolName: name, initiator: initiator,
                                  prologue: try VectorFile.hex(vector, side + "prologue") ?? [],
                                  localStatic: try keyPair(vector, side + "static"),
                                  localEphemeral: try keyPair(vector, side + "ephemeral"),
                                  remoteStatic: try VectorFile.hex(vector, side + "remote_static"),
                                  preSharedKeys: psks.map { SecretBytes($0) })
    }

    /// Runs one vector; returns a description of the first mismatch, or nil when all matched.
    private static func runVector(_ vector: [String: Any], name: String) throws -> String? {
        var initiator = try handshake(vector, name: name, initiator: true)
        var responder = try handshake(vector, name: name, initiator: false)
        guard let messages = vector["messages"] as? [[String: Any]], !messages.isEmpty else {
            throw CryptoError(.invalidVectorFile, "no messages")
        }
        let oneWay = initiator.pattern.isOneWay
        var transport: (toResponder: (NoiseCipherState, NoiseCipherState), toInitiator: (NoiseCipherState, NoiseCipherState))?
        for (index, message) in messages.enumerated() {
            guard let payload = try VectorFile.hex(message, "payload"),
                  let expected = try VectorFile.hex(message, "ciphertext") else {
                throw CryptoError(.invalidVectorFile, "message \(index) lacks payload or ciphertext")
            }
            let fromInitiator = oneWay || index % 2 == 0
            let sent: [UInt8], received: [UInt8]
            if var channels = transport {
                if fromInitiator {
                    sent = try channels.toResponder.0.encrypt(associatedData: [], plaintext: payload)
                    received = try channels.toResponder.1.decrypt(associatedData: [], ciphertext: sent)
                } else {
                    sent = try channels.toInitiator.1.encrypt(associatedData: [], plaintext: payload)
                    received = try channels.toInitiator.0.decrypt(associatedData: [], ciphertext: sent)
                }
                transport = channels
            } else if fromInitiator {
                sent = try initiator.writeMessage(payload: payload)
                received = try responder.readMessage(sent)
            } else {
                sent = try responder.writeMessage(payload: payload)
                received = try initiator.readMessage(sent)
            }
            guard sent == expected else {
                return "message \(index): ciphertext \(Hex.encode(sent)) != expected \(Hex.encode(expected))"
            }
            guard received == payload else { return "message \(index): decrypted payload differs" }
            if transport == nil && initiator.isComplete && responder.isComplete {
                if let hash = try VectorFile.hex(vector, "handshake_hash") {
                    guard initiator.handshakeHash == hash, responder.handshakeHash == hash else {
                        return "handshake hash \(Hex.encode(initiator.handshakeHash)) != expected \(Hex.encode(hash))"
                    }
                }
                let (i1, i2) = try initiator.split()
                let (r1, r2) = try responder.split()
                // (initiator's, responder's) state per direction.
                transport = (toResponder: (i1, r1), toInitiator: (i2, r2))
            }
        }
        return nil
    }
}
