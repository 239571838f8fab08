@testable import MeshCrypto

// libFuzzer harness: stream frame opening and reassembly.
//
// The first byte picks a mode.
//   even: the rest is raw wire bytes fed to a StreamOpener in chunks whose sizes come from the
//         input itself (must open, wait or throw — never crash or buffer without bound).
//   odd:  the rest describes genuine messages (sizes) and split points; they are sealed, the
//         wire is fed in those splits, and what comes out must equal what went in.
func fuzzStream(_ bytes: [UInt8]) {
    guard let mode = bytes.first else { return }
    var opener = StreamOpener(key: FuzzKeys.stream, maximumMessageSize: 200_000)
    if mode & 1 == 0 {
        var offset = 1
        while offset < bytes.count {
            let step = 1 + Int(bytes[offset]) * 7
            let end = min(bytes.count, offset + 1 + step)
            if offset + 1 < end, (try? opener.feed(Array(bytes[(offset + 1)..<end]))) == nil { break }
            offset = end
        }
        return
    }
    var sealer = StreamSealer(key: FuzzKeys.stream)
    var messages: [[UInt8]] = []
    var wire: [UInt8] = []
    var index = 1
    while index + 1 < bytes.count && messages.count < 4 {
        let length = (Int(bytes[index]) << 8 | Int(bytes[index + 1])) * 3 % 70_000
        let message = [UInt8](repeating: UInt8(truncatingIfNeeded: messages.count), count: length)
        guard let sealed = try? sealer.seal(message) else { fatalError("sealing a valid message failed") }
        messages.append(message)
        wire += sealed
        index += 2
    }
    var received: [[UInt8]] = []
    var offset = 0, splitIndex = index
    while offset < wire.count {
        let step = splitIndex < bytes.count ? 1 + Int(bytes[splitIndex]) * 301 : wire.count - offset
        splitIndex += 1
        let end = min(wire.count, offset + step)
        guard let out = try? opener.feed(Array(wire[offset..<end])) else { fatalError("genuine frames failed to open") }
        received += out
        offset = end
    }
    if received != messages { fatalError("stream reassembly changed the messages") }
}
