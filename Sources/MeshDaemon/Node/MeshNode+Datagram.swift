import MeshCrypto
import NIOCore

extension MeshNode {
    /// One received datagram: header lookup, authentication, then dispatch. Anything that does
    /// not authenticate is counted and dropped: no reply, nothing allocated. `bytes` are the
    /// datagram where the transport received it (valid for the call only).
    func handleDatagram(_ bytes: UnsafeRawBufferPointer, from source: PathAddress) {
        guard !ignoresDatagrams else { return }
        let receivedAt = clock.wallNanoseconds()
        guard let opened = channels.openDatagram(bytes) else {
            counters.datagramsRejected += 1
            return
        }
        let now = clock.monotonicNanoseconds()
        counters.datagramsReceived += 1
        let action = channels.datagramMessage(opened, from: source, receivedAt: receivedAt, now: now)
        _ = perform(action, from: opened.peer, path: .datagram, now: now)
    }
}
