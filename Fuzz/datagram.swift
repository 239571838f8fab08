@testable import MeshCrypto

// libFuzzer harness: datagram open and the replay window.
//
// Input layout: the first byte picks a mode.
//   even: the rest is one datagram handed to DatagramOpener.open (must fail cleanly or open).
//   odd:  the rest is a list of little-endian UInt16 counter deltas; the window must accept
//         each fresh counter once, reject duplicates, and never accept anything too old.
func fuzzDatagram(_ bytes: [UInt8]) {
    guard let mode = bytes.first else { return }
    if mode & 1 == 0 {
        var opener = DatagramOpener(key: FuzzKeys.datagram)
        _ = try? opener.open(Array(bytes.dropFirst()), associatedData: [1, 2])
        _ = try? opener.open(Array(bytes.dropFirst()), associatedData: [])
        return
    }
    var window = ReplayWindow()
    var seen = Set<UInt64>()
    var base: UInt64 = 0
    var index = 1
    while index + 1 < bytes.count {
        let delta = UInt64(bytes[index]) | UInt64(bytes[index + 1]) << 8
        // High bit set: step back from the highest counter; otherwise step forward.
        let counter = delta & 0x8000 != 0 ? window.highest &- (delta & 0x7FFF) : base &+ delta
        let verdict = window.check(counter)
        if verdict == .fresh {
            if seen.contains(counter) { fatalError("replay window accepted counter \(counter) twice") }
            if counter < window.highest && window.highest - counter > ReplayWindow.windowSize {
                fatalError("replay window accepted too-old counter \(counter)")
            }
            window.accept(counter)
            seen.insert(counter)
        } else if verdict == .duplicate && !seen.contains(counter) {
            fatalError("replay window reported an unseen counter \(counter) as duplicate")
        }
        base = counter
        index += 2
    }
}
