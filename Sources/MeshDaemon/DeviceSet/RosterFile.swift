import MeshCrypto

/// The roster's file, `roster.bin` in the state folder (mode `0600`, replaced atomically):
///
/// ```
/// "SMRS" | version u8 = 1 | count u32 BE | count × (len u16 BE | record) | SHA-256(all before)[0..<4]
/// ```
/// Records are written parents first. A file that does not parse, or whose records do not
/// verify, stops the daemon at start-up (it is never replaced or emptied: the records are what
/// keeps removed devices out).
struct RosterFile: Sendable {
    static let fileName = "roster.bin"
    static let magic = Array("SMRS".utf8)
    let path: String

    init(stateDirectory: String) {
        path = StateDirectory.path(stateDirectory, Self.fileName)
    }

    /// The records in the file (none when it does not exist).
    func load() throws(PeerStoreError) -> [RosterRecord] {
        let bytes: [UInt8]?
        let mode: UInt32?
        do {
            mode = try AtomicFile.mode(path)
            bytes = try AtomicFile.read(path)
        } catch {
            throw PeerStoreError(code: .io, path: path, detail: error.description)
        }
        guard let bytes else { return [] }
        if let mode, mode & 0o077 != 0 {
            throw PeerStoreError(code: .insecurePermissions, path: path, detail: "its mode is \(String(mode, radix: 8)), not 600")
        }
        do {
            return try Self.decode(bytes)
        } catch {
            throw PeerStoreError(code: .corrupt, path: path, detail: error.description)
        }
    }

    func save(_ records: [RosterRecord]) throws(PeerStoreError) {
        do {
            try AtomicFile.write(Self.encode(records), to: path)
        } catch {
            throw PeerStoreError(code: .io, path: path, detail: error.description)
        }
    }

    static func encode(_ records: [RosterRecord]) -> [UInt8] {
        var writer = WireWriter(capacity: 16 + records.count * 300)
        writer.raw(magic)
        writer.u8(1)
        writer.u32(UInt32(records.count))
        for record in records {
            writer.u16(UInt16(record.encoded.count))
            writer.raw(record.encoded)
        }
        var bytes = writer.bytes
        bytes += PairingSupport.sha256(bytes).prefix(4)
        return bytes
    }

    static func decode(_ bytes: [UInt8]) throws(RosterRecord.Malformed) -> [RosterRecord] {
        guard bytes.count >= 13, Array(bytes.prefix(4)) == magic else { throw .init("not a roster file") }
        guard Array(PairingSupport.sha256(Array(bytes.dropLast(4))).prefix(4)) == Array(bytes.suffix(4)) else {
            throw .init("its checksum does not match (a torn or edited file)")
        }
        var reader = WireReader(Array(bytes.dropLast(4)))
        do {
            _ = try reader.take(4, "magic")
            guard try reader.u8("version") == 1 else { throw RosterRecord.Malformed("unsupported roster file version") }
            let count = Int(try reader.u32("record count"))
            guard count <= Roster.maximumRecords else { throw RosterRecord.Malformed("\(count) records") }
            var records: [RosterRecord] = []
            for index in 0..<count {
                let length = Int(try reader.u16("record length"))
                let body = try reader.take(length, "record")
                do {
                    records.append(try RosterRecord.decode(body))
                } catch {
                    throw RosterRecord.Malformed("record \(index + 1): \(error.description)")
                }
            }
            try reader.expectEnd("roster file")
            return records
        } catch let error as RosterRecord.Malformed {
            throw error
        } catch {
            throw RosterRecord.Malformed("\(error)")
        }
    }
}
