import Foundation
import MeshLocalAPI
import NIOCore
import SessionMesh

/// Encodes `DeliveryEvent`s as local API event frames (docs/LOCAL-API.md § events).
enum LocalAPIEventFrames {
    static func frame(for event: DeliveryEvent, requestID: UInt32) -> LocalAPIFrame? {
        func binary(_ operation: LocalAPIOperation, _ bytes: [UInt8]) -> LocalAPIFrame {
            LocalAPIFrame(kind: .event, operation: operation, flags: .binaryBody, requestID: requestID, body: ByteBuffer(bytes: bytes))
        }
        func json(_ operation: LocalAPIOperation, _ value: some Encodable) -> LocalAPIFrame? {
            guard let body = try? LocalAPIJSON.encode(value) else { return nil }
            return LocalAPIFrame(kind: .event, operation: operation, requestID: requestID, body: body)
        }
        switch event {
        case .envelope(let from, let inboxID, let redelivery, let mode, let encoded):
            var body = ByteBuffer()
            writeEnvelopeBody(from: from, inboxID: inboxID, redelivery: redelivery, mode: mode, encoded: encoded, to: &body)
            return LocalAPIFrame(kind: .event, operation: LocalAPIOperation.envelopeEvent, flags: .binaryBody,
                                 requestID: requestID, body: body)
        case .snapshot(let from, let encoded):
            var bytes: [UInt8] = []
            append(from, to: &bytes)
            return binary(LocalAPIOperation.snapshotEvent, bytes + encoded)
        case .snapshotRequest(let from, let encoded):
            var bytes: [UInt8] = []
            append(from, to: &bytes)
            return binary(LocalAPIOperation.snapshotRequestEvent, bytes + encoded)
        case .reachability(let peer, let featureID, let reachable, let reason):
            return json(LocalAPIOperation.reachabilityEvent,
                        MeshReachabilityEvent(peer: peer, featureID: featureID, reachable: reachable, reason: reason))
        case .anchor(let from, let sessionID, let featureID, let revision, let anchor):
            return json(LocalAPIOperation.anchorEvent,
                        MeshAnchorEvent(sessionID: sessionID, featureID: featureID, revision: revision,
                                        anchor: MeshTimerAnchorBody(anchor), from: from))
        case .session(let record, let change):
            return json(LocalAPIOperation.sessionEvent, MeshSessionEvent(MeshSessionRecord(record), change: change))
        case .watermark(let peer, let sessionID, let featureID, let sequence):
            return json(LocalAPIOperation.watermarkEvent,
                        MeshWatermarkBody(sessionID: sessionID, featureID: featureID, peer: peer, sequence: sequence))
        }
    }

    /// Bytes of an envelope event's body (docs/LOCAL-API.md § events):
    /// `flags u8 | inbox id u64 | from: u8 length + UTF-8 | mode u8 | encoded envelope`.
    static func envelopeBodyLength(from: String, encoded: [UInt8]) -> Int {
        1 + 8 + 1 + min(from.utf8.count, 255) + 1 + encoded.count
    }

    /// Writes an envelope event's body (`envelopeBodyLength` bytes) at the end of `body`, in
    /// one write.
    static func writeEnvelopeBody(from: String, inboxID: Int64, redelivery: Bool, mode: UInt8, encoded: [UInt8],
                                  to body: inout ByteBuffer) {
        let total = envelopeBodyLength(from: from, encoded: encoded)
        var from = from
        from.withUTF8 { utf8 in
            let fromCount = min(utf8.count, 255)
            body.writeWithUnsafeMutableBytes(minimumWritableBytes: total) { out in
                out.storeBytes(of: UInt8(redelivery ? 1 : 0), toByteOffset: 0, as: UInt8.self)
                out.storeBytes(of: UInt64(bitPattern: inboxID).bigEndian, toByteOffset: 1, as: UInt64.self)
                out.storeBytes(of: UInt8(fromCount), toByteOffset: 9, as: UInt8.self)
                if fromCount > 0 {
                    UnsafeMutableRawBufferPointer(rebasing: out[10..<(10 + fromCount)])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(utf8)[0..<fromCount]))
                }
                out.storeBytes(of: mode, toByteOffset: 10 + fromCount, as: UInt8.self)
                encoded.withUnsafeBytes { bytes in
                    UnsafeMutableRawBufferPointer(rebasing: out[(11 + fromCount)..<total]).copyMemory(from: bytes)
                }
                return total
            }
        }
    }

    /// `u8 length | UTF-8` (device IDs are far below 255 bytes).
    static func append(_ text: String, to bytes: inout [UInt8]) {
        let utf8 = Array(text.utf8.prefix(255))
        bytes.append(UInt8(utf8.count))
        bytes.append(contentsOf: utf8)
    }
}

extension MeshSessionRecord {
    /// The local API's form of a directory row.
    init(_ record: SessionRecord) {
        self.init(sessionID: record.sessionID, featureID: record.featureID, owner: record.owner, status: record.status,
                  updatedAt: record.updatedAt.timeIntervalSince1970, revision: record.revision, sourcePeer: record.sourcePeer)
    }
}
