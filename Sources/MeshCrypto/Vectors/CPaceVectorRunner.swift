/// Runs CPace test vectors in the format of draft-irtf-cfrg-cpace's JSON vectors
/// (`PRS_hex`, `CI_hex`, `sid_hex`, `ya_le_hex`, …) against ``CPace``.
///
/// Every field present is checked: the generator string and its hash, `g`, `Ya`, `Yb`, `K`,
/// both transcripts and both ISKs (each ISK from both sides).
public enum CPaceVectorRunner {
    /// Runs one vector object or `{"vectors": [...]}` from `fileContents`.
    /// Throws ``CryptoError/Code/invalidVectorFile`` when the file itself cannot be understood.
    public static func run(fileContents: [UInt8]) throws -> VectorReport {
        var report = VectorReport()
        for (index, vector) in try VectorFile.objects(fileContents, allowSingle: true).enumerated() {
            let label = "#\(index + 1) \(vector["suite"] as? String ?? "CPace")"
            if let dsi = vector["DSI"] as? String, dsi != "CPaceRistretto255" {
                report.unsupported += 1
                if !report.unsupportedProtocols.contains(dsi) { report.unsupportedProtocols.append(dsi) }
                continue
            }
            do {
                let problems = try check(vector)
                if problems.isEmpty {
                    report.passed += 1
                } else {
                    report.failed += 1
                    report.failures.append("\(label): " + problems.joined(separator: "; "))
                }
            } catch {
                report.failed += 1
                report.failures.append("\(label): \(error)")
            }
        }
        return report
    }

    private static func check(_ vector: [String: Any]) throws -> [String] {
        guard let password = try VectorFile.hex(vector, "PRS_hex") else {
            throw CryptoError(.invalidVectorFile, "PRS_hex is missing")
        }
        let channel = try VectorFile.hex(vector, "CI_hex") ?? []
        let sid = try VectorFile.hex(vector, "sid_hex") ?? []
        let adA = try VectorFile.hex(vector, "ADa_hex") ?? []
        let adB = try VectorFile.hex(vector, "ADb_hex") ?? []
        var problems: [String] = []
        var checked = 0
        func compare(_ field: String, _ actual: [UInt8]) throws {
            guard let expected = try VectorFile.hex(vector, field) else { return }
            checked += 1
            if actual != expected { problems.append("\(field) is \(Hex.encode(actual)), expected \(Hex.encode(expected))") }
        }
        let string = CPace.generatorString(password: password, channelIdentifier: channel, sessionID: sid)
        try compare("generator_string_hex", string)
        try compare("generator_hash_hex", Sodium.sha512(string))
        try compare("generator_g_hex", CPace.generator(password: password, channelIdentifier: channel, sessionID: sid).unsafeCopy)

        guard let ya = try VectorFile.hex(vector, "ya_le_hex"), let yb = try VectorFile.hex(vector, "yb_le_hex") else {
            if checked == 0 { throw CryptoError(.invalidVectorFile, "nothing to check: no expected values and no scalars") }
            return problems
        }
        let initiator = try CPace(role: .initiator, password: password, channelIdentifier: channel, sessionID: sid,
                                  associatedData: adA, scalar: SecretBytes(ya))
        let responder = try CPace(role: .responder, password: password, channelIdentifier: channel, sessionID: sid,
                                  associatedData: adB, scalar: SecretBytes(yb))
        try compare("Ya_hex", initiator.publicShare)
        try compare("Yb_hex", responder.publicShare)
        let sharedA = try Sodium.ristrettoScalarMult(scalar: SecretBytes(ya), point: responder.publicShare)
        let sharedB = try Sodium.ristrettoScalarMult(scalar: SecretBytes(yb), point: initiator.publicShare)
        try compare("K_hex", sharedA.unsafeCopy)
        if sharedA != sharedB { problems.append("K differs between the two sides") }

        let transcriptA = initiator.transcript(peerShare: responder.publicShare, peerAssociatedData: adB)
        let transcriptB = responder.transcript(peerShare: initiator.publicShare, peerAssociatedData: adA)
        try compare("transcript_ir_hex", transcriptA)
        if transcriptA != transcriptB { problems.append("transcript_ir differs between the two sides") }
        let iskA = try initiator.finish(peerShare: responder.publicShare, peerAssociatedData: adB)
        let iskB = try responder.finish(peerShare: initiator.publicShare, peerAssociatedData: adA)
        try compare("ISK_ir_hex", iskA.unsafeCopy)
        if iskA != iskB { problems.append("ISK_ir differs between the two sides") }

        let ordered = CPace.orderedConcatenation(CPace.lengthValueConcatenation([initiator.publicShare, adA]),
                                                 CPace.lengthValueConcatenation([responder.publicShare, adB]))
        try compare("transcript_oc_hex", ordered)
        let parallelA = try initiator.finishParallel(peerShare: responder.publicShare, peerAssociatedData: adB)
        let parallelB = try responder.finishParallel(peerShare: initiator.publicShare, peerAssociatedData: adA)
        try compare("ISK_oc_hex", parallelA.unsafeCopy)
        if parallelA != parallelB { problems.append("ISK_oc differs between the two sides") }
        return problems
    }
}
