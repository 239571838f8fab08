import CSodium

/// Raw libsodium X25519 calls, for benchmarks: the DH floor under a Noise IK handshake side.
public struct X25519Baseline: Sendable {
    private var scalar = [UInt8](repeating: 0x11, count: 32)
    private var point: [UInt8]
    private var output = [UInt8](repeating: 0, count: 32)

    /// Prepares a fixed scalar and point.
    public init() {
        Sodium.ensureInitialized()
        var point = [UInt8](repeating: 0, count: 32)
        let seed = [UInt8](repeating: 0x22, count: 32)
        point.withUnsafeMutableBufferPointer { p in
            seed.withUnsafeBufferPointer { _ = crypto_scalarmult_base(p.baseAddress!, $0.baseAddress!) }
        }
        self.point = point
    }

    /// One fixed-base multiplication (ephemeral key generation) and four variable-base
    /// multiplications (es, ss, ee, se): the DH work of one IK side.
    public mutating func handshakeSideDH() {
        scalar.withUnsafeBufferPointer { n in
            point.withUnsafeBufferPointer { p in
                output.withUnsafeMutableBufferPointer { q in
                    _ = crypto_scalarmult_base(q.baseAddress!, n.baseAddress!)
                    for _ in 0..<4 { _ = crypto_scalarmult(q.baseAddress!, n.baseAddress!, p.baseAddress!) }
                }
            }
        }
    }
}
