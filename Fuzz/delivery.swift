import SessionMesh
@testable import MeshDaemon

// libFuzzer harness `delivery`: every daemon-to-daemon delivery message (types 0x01-0x0F) and
// what the router decodes inside them.
//
// The input goes to `DeliveryMessage(decoding:)`. Whatever decodes must encode to bytes that
// decode again, and (except timer anchors, whose times pass through `Date`) back to exactly the
// input. The payloads a router looks into are decoded the way it does: item payloads as
// envelopes (`SessionWireCodec.decodeEnvelope`, `decodeEnvelopeMetadata`), snapshot pushes and
// replies as snapshots, snapshot requests as requests. Errors are fine; crashes, sanitizer
// reports and unbounded allocation are findings.
func fuzzDelivery(_ bytes: [UInt8]) {
    guard let message = try? DeliveryMessage(decoding: bytes) else { return }
    let encoded = message.encode()
    guard (try? DeliveryMessage(decoding: encoded)) != nil else {
        fuzzFailure("the encoding of a decoded delivery message does not decode")
    }
    if case .anchor = message {} else if encoded != bytes {
        fuzzFailure("delivery message does not encode back to its input")
    }
    switch message {
    case .realtime(let item):
        decodePayload(item)
    case .realtimeBatch(let items):
        items.forEach(decodePayload)
    case .reliableBatch(let items):
        for (_, item) in items { decodePayload(item) }
    case .snapshotPush(let snapshot), .snapshotReply(let snapshot):
        _ = try? SessionWireCodec.decodeSnapshot(snapshot)
    case .snapshotRequest(let request):
        _ = try? SessionWireCodec.decodeSnapshotRequest(request)
    case .anchor(let record):
        if (try? DeliveryAnchorRecord(stored: record.encoded())) == nil {
            fuzzFailure("a decoded timer anchor does not survive being stored")
        }
    default:
        break
    }
}

private func decodePayload(_ item: DeliveryItem) {
    let metadata = try? SessionWireCodec.decodeEnvelopeMetadata(item.payload)
    let envelope = try? SessionWireCodec.decodeEnvelope(item.payload)
    if let envelope, envelope.metadata != metadata {
        fuzzFailure("envelope metadata decoded two ways differs")
    }
}
