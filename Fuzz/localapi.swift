import MeshLocalAPI
import NIOCore
@testable import MeshDaemon

// libFuzzer harness `localapi`: what a local client can send meshd over the Unix socket.
//
// The first byte picks a mode:
//   even: the next byte picks one of the operations the daemon implements (control and data);
//         the rest is that request's body (binary for `send` and `snapshot.publish`, JSON for
//         the others), handed to `LocalAPIRequest.parse` as a request frame would be.
//   odd:  the rest is a raw byte stream from a client: frames are cut from it with
//         `LocalAPIFrameDecoder.parse` (as the connection's decoder does) and every frame goes
//         to `LocalAPIRequest.parse`, until the stream is used up or a frame is refused.
// A request is parsed or refused with an error body; nothing may crash.
func fuzzLocalAPI(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    if input.byte() & 1 == 0 {
        let operations = LocalAPIOperation.controlOperations + LocalAPIOperation.dataOperations
        let operation = operations[Int(input.byte()) % operations.count]
        let body = ByteBuffer(bytes: input.rest())
        let frame = LocalAPIFrame(kind: .request, operation: operation,
                                  flags: operation.takesBinaryBody ? .binaryBody : [], requestID: 1, body: body)
        _ = try? LocalAPIRequest.parse(frame)
        return
    }
    var stream = ByteBuffer(bytes: input.rest())
    var frames = 0
    while frames < 1_000 {
        guard let frame = try? LocalAPIFrameDecoder.parse(&stream) else { return }
        frames += 1
        if frame.wireLength != LocalAPIWireFormat.headerLength + frame.body.readableBytes {
            fuzzFailure("frame length bookkeeping")
        }
        do {
            _ = try LocalAPIRequest.parse(frame)
        } catch let rejection {
            if rejection.closesConnection { return }
        }
    }
}
