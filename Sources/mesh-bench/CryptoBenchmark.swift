#if canImport(Glibc)
import Glibc
#endif
import MeshCrypto

/// `mesh-bench crypto`: datagram seal+open next to raw libsodium, Noise IKpsk2 handshake CPU per
/// side, CPace CPU per side. Each figure is the median of several rounds.
///
/// Options: `--rounds N` (default 7), `--scale X` (multiplies iteration counts, default 1).
enum CryptoBenchmark {
    static func run(arguments: [String]) {
        var rounds = 7, scale = 1.0
        var index = 0
        while index < arguments.count {
            switch arguments[index] {
            case "--rounds" where index + 1 < arguments.count: rounds = max(1, Int(arguments[index + 1]) ?? rounds); index += 1
            case "--scale" where index + 1 < arguments.count: scale = max(0.01, Double(arguments[index + 1]) ?? scale); index += 1
            default: print("mesh-bench crypto: ignoring unknown argument \(arguments[index])")
            }
            index += 1
        }
        do {
            try datagrams(rounds: rounds, scale: scale)
            try handshake(rounds: rounds, iterations: Int(1000 * scale))
            try cpace(rounds: rounds, iterations: Int(1000 * scale))
        } catch {
            print("mesh-bench crypto: failed: \(error)")
            exit(1)
        }
    }

    /// Per-thread CPU time in nanoseconds.
    static func cpuNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    /// Median over `rounds` of the nanoseconds per iteration of `body`.
    static func measure(rounds: Int, iterations: Int, _ body: (Int) throws -> Void) rethrows -> Double {
        var samples: [Double] = []
        for _ in 0..<rounds {
            let start = cpuNanoseconds()
            for iteration in 0..<iterations { try body(iteration) }
            samples.append(Double(cpuNanoseconds() - start) / Double(iterations))
        }
        return median(samples)
    }

    static func format(_ value: Double, _ digits: Int = 2) -> String {
        var scaled = value
        for _ in 0..<digits { scaled *= 10 }
        let rounded = (scaled).rounded()
        var text = String(Int(rounded))
        while text.count <= digits { text = "0" + text }
        return digits == 0 ? text : String(text.dropLast(digits)) + "." + String(text.suffix(digits))
    }

    static func datagrams(rounds: Int, scale: Double) throws {
        print("datagram seal+open (ChaCha20-Poly1305, 4-byte header as AD), CPU ns per message, median of \(rounds) rounds")
        print("size     MeshCrypto [UInt8]   MeshCrypto into:   raw libsodium   ratio([UInt8])  ratio(into:)  GB/s([UInt8])  GB/s(raw)   (GB/s = payload bytes per seal+open)")
        for size in [64, 1200] {
            let iterations = Int(Double(size == 64 ? 400_000 : 150_000) * scale)
            let header: [UInt8] = [1, 2, 3, 4]
            let payload = [UInt8](repeating: 0xA5, count: size)

            var (alice, bob) = try ChannelKeys.loopbackPair()
            var sealedBuffer = [UInt8](repeating: 0, count: size + DatagramSealer.overhead)
            var openedBuffer = [UInt8](repeating: 0, count: size)
            var baseline = ChaChaPolyBaseline(messageSize: size)
            var rawCounter: UInt64 = 0
            // The three variants alternate within each round, so load from other processes on
            // this shared machine hits all of them alike; each figure is the median over rounds.
            var arraySamples: [Double] = [], inPlaceSamples: [Double] = [], rawSamples: [Double] = []
            for _ in 0..<rounds {
                arraySamples.append(try measure(rounds: 1, iterations: iterations) { _ in
                    let sealed = try alice.datagramSender.seal(payload, associatedData: header)
                    let opened = try bob.datagramReceiver.open(sealed, associatedData: header)
                    if opened.count != size { throw BenchError.mismatch }
                })
                inPlaceSamples.append(try measure(rounds: 1, iterations: iterations) { _ in
                    try payload.withUnsafeBytes { p in
                        try header.withUnsafeBytes { h in
                            try sealedBuffer.withUnsafeMutableBytes { s in
                                let count = try alice.datagramSender.seal(p, associatedData: h, into: s)
                                let opened = try openedBuffer.withUnsafeMutableBytes { o in
                                    try bob.datagramReceiver.open(UnsafeRawBufferPointer(rebasing: s[0..<count]),
                                                                  associatedData: h, into: o)
                                }
                                if opened != size { throw BenchError.mismatch }
                            }
                        }
                    }
                })
                rawSamples.append(try measure(rounds: 1, iterations: iterations) { _ in
                    rawCounter += 1
                    if !baseline.sealAndOpen(counter: rawCounter) { throw BenchError.mismatch }
                })
            }
            let arrays = median(arraySamples), inPlace = median(inPlaceSamples), raw = median(rawSamples)
            // Seal+open moves each byte twice (encrypt and decrypt): GB/s counts plaintext bytes per seal+open.
            let gbps = Double(size) / arrays, gbpsRaw = Double(size) / raw
            print("\(String(size).padding(9))\(format(arrays, 1).padding(21))\(format(inPlace, 1).padding(19))"
                  + "\(format(raw, 1).padding(16))\(format(arrays / raw).padding(16))\(format(inPlace / raw).padding(14))"
                  + "\(format(gbps).padding(15))\(format(gbpsRaw))")
        }
    }

    static func handshake(rounds: Int, iterations: Int) throws {
        let name = "Noise_IKpsk2_25519_ChaChaPoly_SHA256"
        let alice = X25519KeyPair.generate(), bob = X25519KeyPair.generate()
        let psk = SecretBytes.random(count: 32)
        var initiatorSamples: [Double] = [], responderSamples: [Double] = []
        for _ in 0..<rounds {
            var initiatorTotal: UInt64 = 0, responderTotal: UInt64 = 0
            for _ in 0..<iterations {
                var start = cpuNanoseconds()
                var initiator = try NoiseHandshake(protocolName: name, initiator: true, localStatic: alice,
                                                   remoteStatic: bob.publicKey, preSharedKeys: [psk])
                let first = try initiator.writeMessage(payload: [])
                initiatorTotal += cpuNanoseconds() - start

                start = cpuNanoseconds()
                var responder = try NoiseHandshake(protocolName: name, initiator: false, localStatic: bob)
                _ = try responder.readMessage(first)
                responder.setPreSharedKeys([psk])
                let second = try responder.writeMessage(payload: [])
                _ = try responder.channelKeys()
                responderTotal += cpuNanoseconds() - start

                start = cpuNanoseconds()
                _ = try initiator.readMessage(second)
                _ = try initiator.channelKeys()
                initiatorTotal += cpuNanoseconds() - start
            }
            initiatorSamples.append(Double(initiatorTotal) / Double(iterations))
            responderSamples.append(Double(responderTotal) / Double(iterations))
        }
        var floor = X25519Baseline()
        let floorNanoseconds = measure(rounds: rounds, iterations: iterations) { _ in floor.handshakeSideDH() }
        print("Noise_IKpsk2_25519_ChaChaPoly_SHA256 handshake incl. channel keys, CPU µs per side: "
              + "initiator \(format(median(initiatorSamples) / 1000, 1)), responder \(format(median(responderSamples) / 1000, 1))"
              + "; raw libsodium DH floor (1 fixed-base + 4 X25519) \(format(floorNanoseconds / 1000, 1))")
    }

    static func cpace(rounds: Int, iterations: Int) throws {
        let code = PairingCode.generate()
        var password: [UInt8] = []
        code.secret.withUnsafeBytes { password = Array($0) }
        let ci = Array("bench".utf8), sid = [UInt8](repeating: 9, count: 16)
        var initiatorSamples: [Double] = [], responderSamples: [Double] = []
        for _ in 0..<rounds {
            var initiatorTotal: UInt64 = 0, responderTotal: UInt64 = 0
            for _ in 0..<iterations {
                var start = cpuNanoseconds()
                let a = try CPace(role: .initiator, password: password, channelIdentifier: ci, sessionID: sid, associatedData: [1])
                initiatorTotal += cpuNanoseconds() - start
                start = cpuNanoseconds()
                let b = try CPace(role: .responder, password: password, channelIdentifier: ci, sessionID: sid, associatedData: [2])
                _ = try b.finish(peerShare: a.publicShare, peerAssociatedData: [1])
                responderTotal += cpuNanoseconds() - start
                start = cpuNanoseconds()
                _ = try a.finish(peerShare: b.publicShare, peerAssociatedData: [2])
                initiatorTotal += cpuNanoseconds() - start
            }
            initiatorSamples.append(Double(initiatorTotal) / Double(iterations))
            responderSamples.append(Double(responderTotal) / Double(iterations))
        }
        print("CPace ristretto255/SHA-512, CPU µs per side: "
              + "initiator \(format(median(initiatorSamples) / 1000, 1)), responder \(format(median(responderSamples) / 1000, 1))")
    }

    enum BenchError: Error { case mismatch }
}

extension String {
    /// Left-aligned in a column of `width` characters.
    func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
