import Foundation

extension String {
    /// `bytes` as a string when they are valid UTF-8, else nil: what `String(validating:as:)`
    /// returns, at a third of its cost (that initializer runs unspecialized generic code, with
    /// metadata lookups, on every call — about 1 000 instructions for a short name). Decoding
    /// repairs invalid sequences, so the result has exactly the input's bytes only when there was
    /// nothing to repair; one `memcmp` of the string's own UTF-8 storage tells.
    ///
    /// The wire decoders of the core, the local API and the daemon share it: names and IDs pass
    /// through it on every message.
    public init?(exactUTF8 bytes: UnsafeRawBufferPointer) {
        var text = String(decoding: bytes.bindMemory(to: UInt8.self), as: UTF8.self)
        let unchanged = text.withUTF8 { stored in
            guard stored.count == bytes.count else { return false }
            guard let decoded = stored.baseAddress, let original = bytes.baseAddress else { return true }
            return memcmp(decoded, original, bytes.count) == 0
        }
        guard unchanged else { return nil }
        self = text
    }
}
