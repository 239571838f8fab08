import MeshCore

/// A one-time pairing code people read off one screen and type on another, e.g. `7KQ4-MX9D`.
///
/// Seven random Crockford base32 characters (35 bits from libsodium's random generator) and
/// one check character, in two groups of four. The first ``publicHintLength`` characters are
/// the code's *public hint* (``publicHint``, `7K` above): the inviting daemon advertises them
/// on the local network (mDNS TXT `pair=7K`) so that `meshctl pair -` can find the inviter
/// without an address. They are independent random characters, so the hint reveals nothing
/// about the other five, which stay secret: 25 bits, above the project's 24-bit floor, behind a
/// PAKE that allows one online guess per attempt and three attempts per code. The check (see
/// ``Base32Check``) catches any one mistyped character and any two swapped characters before a
/// network round trip is spent on them. The code is single-use and short-lived: the pairing service must invalidate it after a
/// few failed attempts and a few minutes. ``description`` shows the code; only display it to the
/// user who asked for it, never log it.
public struct PairingCode: Sendable, CustomStringConvertible, Equatable {
    static let secretLength = 7
    /// Number of leading characters that form the public hint (see ``publicHint``).
    public static let publicHintLength = 2
    static let codec = Base32Check.crockford
    /// Salt of the check value, so a device ID group is never mistaken for a code.
    static let checkSalt: UInt8 = 17

    /// The seven secret values (0…31).
    private let values: [UInt8]

    private init(values: [UInt8]) { self.values = values }

    /// A fresh random code.
    public static func generate() -> PairingCode {
        PairingCode(values: (0..<secretLength).map { _ in UInt8(Sodium.randomUniform(32)) })
    }

    /// Parses a typed code: case, dashes and spaces do not matter, and `I`/`L`/`O` are read as
    /// `1`/`1`/`0`. Throws ``CryptoError/Code/invalidPairingCode`` saying what is wrong (length,
    /// which character is not allowed, or that the code has a typo).
    public static func parse(_ text: String) throws -> PairingCode {
        let characters = Base32Check.stripSeparators(text)
        guard characters.count == secretLength + 1 else {
            throw CryptoError(.invalidPairingCode,
                              "a pairing code has 8 characters (like 7KQ4-MX9D); got \(characters.count)")
        }
        var values: [UInt8] = []
        for (index, character) in characters.enumerated() {
            guard let value = codec.value(of: character) else {
                throw CryptoError(.invalidPairingCode,
                                  "character \(index + 1) is not a letter or digit used in pairing codes (U is never used)")
            }
            values.append(value)
        }
        let check = values.removeLast()
        guard Base32Check.checkValue(values, salt: checkSalt) == check else {
            throw CryptoError(.invalidPairingCode, "the code has a typo; check it against the other screen and type it again")
        }
        return PairingCode(values: values)
    }

    /// The grouped, typable form, e.g. `7KQ4-MX9D`.
    public var description: String {
        let symbols = (values + [Base32Check.checkValue(values, salt: Self.checkSalt)]).map { Self.codec.symbol($0) }
        return String(symbols[0..<4]) + "-" + String(symbols[4..<8])
    }

    /// The code's first two characters in canonical form (e.g. `7K`): NOT secret.
    ///
    /// The inviter advertises it while the code is live, and a joiner holding the whole code
    /// uses it to pick the right inviter among several on the network. It is drawn
    /// independently of the remaining five characters (25 bits), so knowing it does not help
    /// anyone guess them; it is not a hash of anything secret.
    public var publicHint: String {
        String(values.prefix(Self.publicHintLength).map { Self.codec.symbol($0) })
    }

    /// The bytes fed to CPace as the password: the canonical seven secret characters.
    public var secret: SecretBytes {
        SecretBytes(values.map { UInt8(ascii: Self.codec.symbol($0).unicodeScalars.first ?? "0") })
    }

    /// Constant-time comparison of the secret values.
    public static func == (lhs: PairingCode, rhs: PairingCode) -> Bool { lhs.secret == rhs.secret }
}

extension PairingCode: CustomDebugStringConvertible, CustomReflectable {
    /// Redacted: a code must not end up in a debug log by accident.
    public var debugDescription: String { "PairingCode(redacted)" }
    /// Hides the secret values from `dump` and mirrors.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
