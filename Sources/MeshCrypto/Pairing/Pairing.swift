/// Values both sides derive after a successful CPace run.
public enum Pairing {
    /// A short string both sides show after pairing, e.g. `"4817 2093"`: 8 decimal digits
    /// (≈ 26.6 bits) from SHA-512("SessionMesh v1 verify" || ISK || transcript). Equal strings
    /// on both screens mean both devices ran CPace with each other and the same code.
    public static func verificationString(isk: SecretBytes, transcript: [UInt8]) -> String {
        let label = Array("SessionMesh v1 verify".utf8)
        var digest = [UInt8](repeating: 0, count: Sodium.sha512Length)
        isk.withUnsafeBytes { k in
            label.withUnsafeBytes { l in
                transcript.withUnsafeBytes { t in
                    digest.withUnsafeMutableBytes { Sodium.sha512([l, k, t], into: $0) }
                }
            }
        }
        let number = digest[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 100_000_000
        Sodium.zero(&digest)
        let digits = String(number)
        let padded = String(repeating: "0", count: 8 - digits.count) + digits
        return String(padded.prefix(4)) + " " + String(padded.suffix(4))
    }

    /// The per-pair pre-shared key for the channel's Noise psk (32 bytes):
    /// HMAC-SHA-256(ISK, "SessionMesh v1 pair key" || min(A, B) || max(A, B)), with the two static
    /// keys in byte order, so both sides get the same key whichever they call A.
    public static func pairKey(isk: SecretBytes, publicKeyA: [UInt8], publicKeyB: [UInt8]) -> SecretBytes {
        let (first, second) = publicKeyA.lexicographicallyPrecedes(publicKeyB)
            ? (publicKeyA, publicKeyB) : (publicKeyB, publicKeyA)
        let info = Array("SessionMesh v1 pair key".utf8) + first + second
        return SecretBytes(count: 32) { out in
            isk.withUnsafeBytes { k in info.withUnsafeBytes { Sodium.hmacSHA256(key: k, [$0], into: out) } }
        }
    }
}
