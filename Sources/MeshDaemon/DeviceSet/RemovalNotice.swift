import MeshCrypto
import MeshCore

/// How a device that was removed while it was away learns of it (docs/PROTOCOL.md, "Removal
/// notices"): members erased its pair keys and answer its handshakes with silence, so it asks
/// on a connection of its own (preamble kind 3) and a member that removed it answers with the
/// roster, sealed under a key only the two of them can derive (`DeviceSetKeys.noticeKey`).
///
/// ```
/// query (1 frame, 56 bytes): device key (32) | wall time i64 BE | mac (16)
///   mac = HMAC-SHA-256(notice key, "SessionMesh removal query v1" || device key || member key || time)[0..<16]
/// reply (1 frame): nonce (24) | XChaCha20-Poly1305(notice key, nonce,
///   aad = "SessionMesh removal notice v1", count u16 | count × (len u16 | record))
/// ```
/// A member answers only a device its roster removed, whose MAC verifies, stamped within an
/// hour of its clock; anything else is closed without a byte.
enum RemovalNotice {
    static let queryLength = 56
    static let queryLabel = Array("SessionMesh removal query v1".utf8)
    static let replyLabel = Array("SessionMesh removal notice v1".utf8)
    static let maximumSkewNanoseconds: Int64 = 3_600_000_000_000
    /// A reply fits one frame.
    static let maximumReplyBytes = 65_535

    static func mac(key: SecretBytes, device: [UInt8], member: [UInt8], time: Int64) -> [UInt8] {
        var writer = WireWriter(capacity: 100)
        writer.raw(queryLabel); writer.raw(device); writer.raw(member); writer.i64(time)
        return Array(PairingSupport.hmacSHA256(key: key, message: writer.bytes).prefix(16))
    }

    /// The query `own` sends to `member`.
    static func query(own: X25519KeyPair, member: [UInt8], time: Int64) -> [UInt8]? {
        guard let key = DeviceSetKeys.noticeKey(own: own, peer: member) else { return nil }
        var writer = WireWriter(capacity: queryLength)
        writer.raw(own.publicKey); writer.i64(time)
        writer.raw(mac(key: key, device: own.publicKey, member: member, time: time))
        return writer.bytes
    }

    /// The reply of `own` (a member) to `frame`, or nil (silence) unless `isRemoved` says the
    /// asking device was removed and the query verifies.
    static func answer(_ frame: [UInt8], own: X25519KeyPair, wall: Int64, isRemoved: ([UInt8]) -> Bool,
                       records: () -> [[UInt8]]) -> [UInt8]? {
        guard frame.count == queryLength else { return nil }
        let device = Array(frame[0..<32])
        var reader = WireReader(Array(frame[32..<40]))
        guard let time = try? reader.i64("time"), abs(time &- wall) <= maximumSkewNanoseconds, isRemoved(device),
              let key = DeviceSetKeys.noticeKey(own: own, peer: device),
              PairingSupport.constantTimeEqual(mac(key: key, device: device, member: own.publicKey, time: time), Array(frame[40..<56]))
        else { return nil }
        var body = WireWriter(capacity: 4096)
        var included: [[UInt8]] = []
        var size = 2 + PairingSupport.randomNonceLength + 16
        for record in records() {
            guard size + 2 + record.count <= maximumReplyBytes else { break }
            size += 2 + record.count
            included.append(record)
        }
        body.u16(UInt16(included.count))
        for record in included { body.u16(UInt16(record.count)); body.raw(record) }
        return PairingSupport.sealWithRandomNonce(key: key, plaintext: body.bytes, associatedData: replyLabel)
    }

    /// The records in `member`'s reply to `own`, or nil when it does not open or parse.
    static func open(_ reply: [UInt8], own: X25519KeyPair, member: [UInt8]) -> [[UInt8]]? {
        guard let key = DeviceSetKeys.noticeKey(own: own, peer: member),
              let plaintext = PairingSupport.openWithRandomNonce(key: key, sealed: reply, associatedData: replyLabel)
        else { return nil }
        var reader = WireReader(plaintext)
        guard let count = try? reader.u16("count") else { return nil }
        var records: [[UInt8]] = []
        for _ in 0..<count {
            guard let length = try? reader.u16("length"), let record = try? reader.take(Int(length), "record") else { return nil }
            records.append(record)
        }
        return reader.remaining == 0 ? records : nil
    }
}
