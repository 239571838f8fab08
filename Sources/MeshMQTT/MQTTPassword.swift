#if canImport(Glibc)
import Glibc
#endif

/// A broker password: its bytes live in one buffer, zeroed by `zero()` and when the value goes.
///
/// A class, not a struct: a copied array would leave copies behind that nothing zeroes. The
/// client hands the bytes to libmosquitto once (which keeps its own copy for reconnects, freed
/// with the client) and zeroes this buffer right after.
public final class MQTTPassword: @unchecked Sendable {
    private var bytes: [UInt8]

    /// Takes the password's buffer (without a trailing newline); the caller's array is left
    /// empty, so the bytes exist once.
    public init(taking bytes: inout [UInt8]) {
        self.bytes = []
        swap(&self.bytes, &bytes)
    }

    /// A second password with the same bytes, for a second client of the same account (each
    /// client zeroes the one it was given).
    public func copy() -> MQTTPassword {
        var bytes = self.bytes
        return MQTTPassword(taking: &bytes)
    }

    /// Whether the password is empty (or already zeroed).
    public var isEmpty: Bool { bytes.isEmpty }

    /// Runs `body` with the password as a NUL-terminated C string.
    func withCString<Result>(_ body: (UnsafePointer<CChar>) -> Result) -> Result {
        var terminated = bytes + [0]
        defer { terminated.withUnsafeMutableBytes(zeroBytes) }
        return terminated.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }

    /// Overwrites the bytes with zeros and forgets them.
    public func zero() {
        bytes.withUnsafeMutableBytes(zeroBytes)
        bytes.removeAll()
    }

    deinit { zero() }
}

/// Overwrites `buffer` with zeros in a way the compiler may not drop.
public func zeroBytes(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress, buffer.count > 0 else { return }
    explicit_bzero(base, buffer.count)
}
