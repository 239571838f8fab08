/// Secret key material: zeroed when the last copy goes away, never printed, compared in constant time.
///
/// Copies of a `SecretBytes` value share one immutable buffer; the buffer is overwritten with
/// `sodium_memzero` when the last copy is released. `description` and `debugDescription` only say
/// how many bytes there are, so a secret that slips into a log or an interpolated string shows
/// `SecretBytes(32 bytes, redacted)`. `==` uses `sodium_memcmp` (constant time for equal lengths;
/// lengths are not secret).
public struct SecretBytes: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Owns the bytes; zeroes them on deinit. Immutable after initialisation, hence Sendable.
    final class Storage: @unchecked Sendable {
        let buffer: UnsafeMutableRawBufferPointer

        init(count: Int) {
            buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            self.count = count
        }

        let count: Int

        deinit {
            Sodium.zero(buffer)
            buffer.deallocate()
        }
    }

    let storage: Storage

    /// Copies `bytes` into zeroing storage. The caller should zero its own copy if it holds one.
    public init(_ bytes: [UInt8]) {
        storage = Storage(count: bytes.count)
        bytes.withUnsafeBytes { source in
            guard let base = source.baseAddress, source.count > 0 else { return }
            storage.buffer.baseAddress!.copyMemory(from: base, byteCount: source.count)
        }
    }

    /// Creates `count` bytes written by `initializer` directly into the zeroing storage, so the
    /// secret never exists in an ordinary array.
    public init(count: Int, _ initializer: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        storage = Storage(count: count)
        try initializer(UnsafeMutableRawBufferPointer(rebasing: storage.buffer[0..<count]))
    }

    /// `count` bytes from libsodium's cryptographically secure random generator.
    public static func random(count: Int) -> SecretBytes {
        SecretBytes(count: count) { Sodium.randomBytes(into: $0) }
    }

    /// The number of bytes.
    public var count: Int { storage.count }

    /// Calls `body` with a read-only view of the bytes. Do not let the pointer escape `body`, and
    /// zero any copy you make of the bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage.buffer[0..<storage.count]))
    }

    /// A copy of the bytes as an ordinary array. Internal: only for code that must hand the bytes
    /// to an API taking arrays, and that zeroes the copy afterwards.
    var unsafeCopy: [UInt8] { withUnsafeBytes { [UInt8]($0) } }

    /// Constant-time comparison (`sodium_memcmp`); different lengths compare unequal.
    public static func == (lhs: SecretBytes, rhs: SecretBytes) -> Bool {
        lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in Sodium.constantTimeEqual(a, b) } }
    }

    /// "SecretBytes(N bytes, redacted)"; never the contents.
    public var description: String { "SecretBytes(\(count) bytes, redacted)" }

    /// Same as ``description``: debuggers and `dump` do not see the contents either.
    public var debugDescription: String { description }
}

extension SecretBytes: CustomReflectable {
    /// Hides the storage from `dump` and mirrors.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
