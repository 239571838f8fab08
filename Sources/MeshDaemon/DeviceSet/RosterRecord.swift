import MeshCrypto
import MeshCore

/// One signed record of the device set's roster: the set's members are a function of the set
/// of records (``RosterView``). Canonical binary encoding, byte by byte in docs/PROTOCOL.md
/// ("The device set").
///
/// A record names its author by its Ed25519 signing key and the records its author had seen
/// (`parents`, the heads of the author's roster), so the records form a DAG whose edges are
/// "happened before". An `add` is signed by its author and by the new device (with the signing
/// key the record binds to the new device's X25519 key), so no device joins without holding
/// its signing key and no device joins without a member.
struct RosterRecord: Sendable, Hashable {
    enum Kind: UInt8, Sendable, CaseIterable {
        /// A device starts a set of its own: binds the author's signing key to its device key.
        case genesis = 1
        /// The author adds `subject` (with `subjectSigningKey` and `name`).
        case add = 2
        /// The author removes `subject` from the set.
        case remove = 3
        /// The author's device takes the name `name`.
        case rename = 4
        /// New derived pair keys for every pair of members that never paired directly.
        case rotate = 5
    }

    /// Encoding version.
    static let version: UInt8 = 1
    /// Prefix of every signed message (28 ASCII bytes).
    static let signatureContext = Array("SessionMesh roster record v1".utf8)
    /// At most this many parents.
    static let maximumParents = 16
    /// A name is 1…64 bytes of UTF-8.
    static let maximumNameBytes = 64
    /// The longest encoding (an add with 16 parents and a 64-byte name).
    static let maximumEncodedBytes = 3 + maximumParents * 32 + 32 + 8 + 32 + 32 + 1 + maximumNameBytes + 64 + 64

    let kind: Kind
    /// Hashes of the records the author had as heads, strictly ascending.
    let parents: [[UInt8]]
    /// The author's Ed25519 public key.
    let author: [UInt8]
    /// Wall time of the author when it made the record (ns since 1970); informational only.
    let time: Int64
    /// genesis: the author's device key; add/remove: the subject's device key (X25519, 32 bytes).
    let subject: [UInt8]
    /// add: the new device's signing key.
    let subjectSigningKey: [UInt8]
    /// genesis, add: the device's name; rename: the author's new name; else empty.
    let name: String
    /// The author's signature over `signedBytes`.
    let authorSignature: [UInt8]
    /// add: the new device's signature over `signedBytes`; else empty.
    let subjectSignature: [UInt8]
    /// The whole encoding.
    let encoded: [UInt8]
    /// SHA-256 of `encoded`: the record's name in `parents`.
    let hash: [UInt8]

    static func == (lhs: RosterRecord, rhs: RosterRecord) -> Bool { lhs.encoded == rhs.encoded }
    func hash(into hasher: inout Hasher) { hasher.combine(hash) }

    /// The subject's device ID (genesis: the author's device).
    var subjectID: DeviceID { DeviceID(publicKey: subject) }

    /// Why bytes are not a record.
    struct Malformed: Error, CustomStringConvertible, Equatable {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// The bytes a record's signatures sign: the context, then the encoding up to the signatures.
    static func signedMessage(_ unsigned: [UInt8]) -> [UInt8] { signatureContext + unsigned }

    /// Encodes the unsigned part (everything before the signatures).
    static func encodeUnsigned(kind: Kind, parents: [[UInt8]], author: [UInt8], time: Int64, subject: [UInt8],
                               subjectSigningKey: [UInt8], name: String) -> [UInt8] {
        var out: [UInt8] = [version, kind.rawValue, UInt8(parents.count)]
        for parent in parents { out += parent }
        out += author
        withUnsafeBytes(of: time.bigEndian) { out += $0 }
        let nameBytes = Array(name.utf8)
        switch kind {
        case .genesis:
            out += subject
            out.append(UInt8(nameBytes.count)); out += nameBytes
        case .add:
            out += subject
            out += subjectSigningKey
            out.append(UInt8(nameBytes.count)); out += nameBytes
        case .remove:
            out += subject
        case .rename:
            out.append(UInt8(nameBytes.count)); out += nameBytes
        case .rotate:
            break
        }
        return out
    }

    /// A new record signed by `signer` (and, for an add, to be countersigned by the new device:
    /// see ``countersigned(by:)``). `parents` are sorted and deduplicated here.
    static func make(kind: Kind, parents: [[UInt8]], signer: SigningKeyPair, time: Int64, subject: [UInt8] = [],
                     subjectSigningKey: [UInt8] = [], name: String = "") throws(Malformed) -> RosterRecord {
        let sortedParents = Array(Set(parents)).sorted { $0.lexicographicallyPrecedes($1) }
        let unsigned = encodeUnsigned(kind: kind, parents: sortedParents, author: signer.publicKey, time: time, subject: subject,
                                      subjectSigningKey: subjectSigningKey, name: name)
        var bytes = unsigned + signer.sign(signedMessage(unsigned))
        if kind == .add { bytes += [UInt8](repeating: 0, count: SigningKeyPair.signatureLength) }
        return try decode(bytes, checkingSignatures: false)
    }

    /// This add with the new device's signature in place of its placeholder; throws when
    /// `subjectKeys` is not the signing key the record names.
    func countersigned(by subjectKeys: SigningKeyPair) throws(Malformed) -> RosterRecord {
        guard kind == .add, subjectKeys.publicKey == subjectSigningKey else { throw Malformed("not an add for this signing key") }
        let unsigned = Array(encoded.dropLast(2 * SigningKeyPair.signatureLength))
        return try RosterRecord.decode(unsigned + authorSignature + subjectKeys.sign(RosterRecord.signedMessage(unsigned)))
    }

    /// The bytes before the signatures.
    var unsignedBytes: [UInt8] {
        Array(encoded.dropLast((kind == .add ? 2 : 1) * SigningKeyPair.signatureLength))
    }

    /// Reads one record; with `checkingSignatures`, also verifies its signature(s). Throws
    /// `Malformed` for anything else than exactly one canonical record.
    static func decode(_ bytes: [UInt8], checkingSignatures: Bool = true) throws(Malformed) -> RosterRecord {
        guard bytes.count <= maximumEncodedBytes else { throw Malformed("\(bytes.count) bytes is longer than any record") }
        var reader = Reader(bytes: bytes)
        guard try reader.byte("version") == version else { throw Malformed("unsupported record version") }
        guard let kind = Kind(rawValue: try reader.byte("kind")) else { throw Malformed("unknown record kind") }
        let parentCount = Int(try reader.byte("parent count"))
        guard parentCount <= maximumParents else { throw Malformed("\(parentCount) parents (at most \(maximumParents))") }
        guard (kind == .genesis) == (parentCount == 0) else {
            throw Malformed(kind == .genesis ? "a genesis has no parents" : "a \(kind) record needs a parent")
        }
        var parents: [[UInt8]] = []
        for index in 0..<parentCount {
            let parent = try reader.bytes(32, "parent \(index + 1)")
            if let last = parents.last, !last.lexicographicallyPrecedes(parent) { throw Malformed("parents not strictly ascending") }
            parents.append(parent)
        }
        let author = try reader.bytes(32, "author")
        let timeBytes = try reader.bytes(8, "time")
        let time = timeBytes.reduce(Int64(0)) { ($0 << 8) | Int64($1) }
        var subject: [UInt8] = []
        var subjectSigningKey: [UInt8] = []
        var name = ""
        switch kind {
        case .genesis:
            subject = try reader.bytes(32, "device key")
            name = try reader.name()
        case .add:
            subject = try reader.bytes(32, "subject device key")
            subjectSigningKey = try reader.bytes(32, "subject signing key")
            name = try reader.name()
            guard subjectSigningKey != author else { throw Malformed("an add of the author itself") }
        case .remove:
            subject = try reader.bytes(32, "subject device key")
        case .rename:
            name = try reader.name()
        case .rotate:
            break
        }
        let unsignedEnd = reader.offset
        let authorSignature = try reader.bytes(64, "author signature")
        let subjectSignature = kind == .add ? try reader.bytes(64, "subject signature") : []
        guard reader.offset == bytes.count else { throw Malformed("\(bytes.count - reader.offset) bytes after the record") }
        let record = RosterRecord(kind: kind, parents: parents, author: author, time: time, subject: subject,
                                  subjectSigningKey: subjectSigningKey, name: name, authorSignature: authorSignature,
                                  subjectSignature: subjectSignature, encoded: bytes, hash: PairingSupport.sha256(bytes))
        if checkingSignatures {
            let message = signedMessage(Array(bytes[..<unsignedEnd]))
            guard SigningKeyPair.verify(authorSignature, of: message, publicKey: author) else {
                throw Malformed("the author's signature does not verify")
            }
            if kind == .add {
                guard SigningKeyPair.verify(subjectSignature, of: message, publicKey: subjectSigningKey) else {
                    throw Malformed("the new device's signature does not verify")
                }
            }
        }
        return record
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func byte(_ field: String) throws(Malformed) -> UInt8 { try bytes(1, field)[0] }

        mutating func bytes(_ count: Int, _ field: String) throws(Malformed) -> [UInt8] {
            guard bytes.count - offset >= count else { throw Malformed("truncated in \(field)") }
            defer { offset += count }
            return Array(bytes[offset ..< offset + count])
        }

        mutating func name() throws(Malformed) -> String {
            let length = Int(try byte("name length"))
            guard length >= 1, length <= RosterRecord.maximumNameBytes else { throw Malformed("name length \(length) (1…64)") }
            let raw = try bytes(length, "name")
            guard let text = String(validating: raw, as: UTF8.self) else { throw Malformed("the name is not UTF-8") }
            return text
        }
    }
}
