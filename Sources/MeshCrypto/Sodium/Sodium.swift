import CSodium

/// The one place where MeshCrypto talks to libsodium.
///
/// Every C call of the module is made by a function in `Sodium` (this file and its extensions),
/// in the style of swift-system's `Util.swift`: callers pass Swift buffers in, get Swift values or a
/// thrown ``CryptoError`` out, and never see a C pointer or a C return code.
enum Sodium {
    /// `sodium_init` runs exactly once, on first use. A `static let` initialiser is lazy and
    /// thread-safe in Swift (it runs under `swift_once`), which is the guarantee libsodium asks
    /// for; every wrapper below calls ``ensureInitialized()`` before touching libsodium.
    private static let initialization: Int32 = sodium_init()

    /// Makes sure libsodium is initialised. Failure means the process has no randomness source;
    /// no key can be made safely then, so this stops the process with a clear message.
    @inline(__always)
    static func ensureInitialized() {
        guard initialization >= 0 else {
            fatalError("MeshCrypto: sodium_init failed (no usable randomness source on this system)")
        }
    }

    /// Turns a libsodium status (0 = success) into a thrown error.
    @inline(__always)
    static func check(_ status: Int32, _ code: CryptoError.Code, _ message: @autoclosure () -> String) throws {
        guard status == 0 else { throw CryptoError(code, message()) }
    }

    // MARK: - Memory

    /// Fills `buffer` with cryptographically secure random bytes.
    static func randomBytes(into buffer: UnsafeMutableRawBufferPointer) {
        ensureInitialized()
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }

    /// `count` cryptographically secure random bytes.
    static func randomBytes(count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { randomBytes(into: $0) }
        return bytes
    }

    /// A uniformly random integer in `0..<upperBound`.
    static func randomUniform(_ upperBound: UInt32) -> UInt32 {
        ensureInitialized()
        return randombytes_uniform(upperBound)
    }

    /// Overwrites `buffer` with zeros in a way the compiler cannot remove.
    static func zero(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        sodium_memzero(base, buffer.count)
    }

    /// Zeroes a byte array in place (for temporaries that held secrets).
    static func zero(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { zero($0) }
    }

    /// Constant-time comparison of two equally long buffers; `false` when lengths differ.
    static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return true }
        ensureInitialized()
        return sodium_memcmp(pa, pb, a.count) == 0
    }

    /// Constant-time "is every byte zero".
    static func isZero(_ a: UnsafeRawBufferPointer) -> Bool {
        guard let base = a.baseAddress?.assumingMemoryBound(to: UInt8.self), a.count > 0 else { return true }
        return sodium_is_zero(base, a.count) == 1
    }
}
