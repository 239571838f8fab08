import Logging
@testable import MeshDaemon
import MeshLocalAPI
import NIOCore
import NIOEmbedded

/// A local API server connection on an `EmbeddedChannel`: the daemon's pipeline (frame decoder
/// with a 256-byte body limit, `LocalAPIFrameWriter`, `LocalAPIConnectionHandler` over a fake
/// control plane, 4 requests in flight, 8 queued), connected, with its counters.
enum EmbeddedLocalAPIConnection {
    static func make() throws -> (EmbeddedChannel, LocalAPICounters) {
        let counters = LocalAPICounters()
        let channel = EmbeddedChannel()
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(ByteToMessageHandler(LocalAPIFrameDecoder(maximumBodyLength: 256)))
        try sync.addHandler(LocalAPIFrameWriter())
        try sync.addHandler(LocalAPIConnectionHandler(
            dispatcher: LocalAPIDispatcher(controlPlane: FakeControlPlane(), defaultPairingLifetime: 300),
            counters: counters, flow: LocalAPIFlowControl(maximumInFlight: 4, maximumQueued: 8),
            logger: Logger(label: "test")))
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/tmp/x.sock")).wait()
        return (channel, counters)
    }
}
