import Foundation
import NIOCore
import NIOEmbedded
import NIOPosix
import Testing
@testable import MeshCrypto
@testable import MeshDaemon

/// A paired peer sends genuine rekey initiations on its channel and never reads. The answers
/// are this daemon's own traffic in the connection's outbound budget: the channel closes at the
/// hard limit instead of queueing answers without bound. (The `router` fuzz harness found it.)
@Suite("Rekey answers in the outbound budget")
struct RekeyOutboundBudgetTests {
    @Test func answersToAPeerThatDoesNotReadStopAtTheHardLimit() async throws {
        let folder = NSTemporaryDirectory() + "rekey-budget-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        #expect(FileManager.default.createFile(atPath: folder + "/identity.key", contents: Data(KeyFile.encode(X25519KeyPair.generate())),
                                               attributes: [.posixPermissions: 0o600]))
        let peerKeys = X25519KeyPair.generate(), pairKey = SecretBytes.random(count: 32)
        try PairedDeviceStore(stateDirectory: folder).save([
            PairedPeer(publicKey: peerKeys.publicKey, name: "peer", pairKey: pairKey, addresses: [], pairedAt: 0)])
        var configuration = DaemonConfiguration(name: "victim", stateDirectory: folder, socketPath: folder + "/meshd.sock",
                                                listen: .init(host: "127.0.0.1", port: 0))
        configuration.channelTuning.outboundReplyBytes = 16 << 10
        configuration.channelTuning.outboundBytes = 32 << 10
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let node = try MeshNode(configuration: configuration, logger: NodeTestBed.logger("victim"), eventLoopGroup: group)
        let peer = DeviceID(publicKey: peerKeys.publicKey)

        let flood = await node.rekeyFloodOnUndrainedConnection(from: peer, peerKeys: peerKeys, pairKey: pairKey, count: 1000)
        let counters = await node.status().counters
        print("rekey flood: \(flood.sent) initiations, \(flood.writes) writes held, peak \(flood.peakHeld) bytes")
        #expect(flood.sent < 1000, "the channel stayed open through every rekey initiation")
        #expect(counters["stream.writes_refused"] == 1)
        #expect(counters["channels.closed_not_reading"] == 1)
        // Past the limit by one message at most (a rekey answer is well under 1 KiB).
        #expect(flood.peakHeld < (32 << 10) + 1024)
        #expect(await node.isActive(peer) == false)
        try await group.shutdownGracefully()
    }
}

/// Keeps every write of a connection, as NIO keeps writes towards a socket whose peer does not
/// read; counts what it holds as the outbound budget charges it.
final class HeldWritesHandler: ChannelOutboundHandler, @unchecked Sendable {
    typealias OutboundIn = ByteBuffer

    private var held: [EventLoopPromise<Void>?] = []
    private(set) var heldBytes = 0
    private(set) var peakCharge = 0
    /// Writes the connection got.
    private(set) var writes = 0
    var charge: Int { heldBytes + held.count * OutboundBudget.perWriteCharge }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        held.append(promise)
        writes += 1
        heldBytes += unwrapOutboundIn(data).readableBytes
        peakCharge = max(peakCharge, charge)
    }

    func flush(context: ChannelHandlerContext) {}

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        let failed = held
        held = []
        heldBytes = 0
        for write in failed { write?.fail(ChannelError.ioOnClosedChannel) }
        context.close(mode: mode, promise: promise)
    }
}

extension MeshNode {
    /// Test seam: installs a channel to `peer` on a connection that holds every write (an
    /// `EmbeddedChannel`, made and torn down on this node's loop), then `peer` sends up to
    /// `count` genuine rekey initiations through the stream reader, stopping once the channel is
    /// gone. Returns the initiations handled, the writes the connection got and its peak charge.
    func rekeyFloodOnUndrainedConnection(from peer: DeviceID, peerKeys: X25519KeyPair, pairKey: SecretBytes,
                                         count: Int) -> (sent: Int, writes: Int, peakHeld: Int) {
        let id: UInt64 = 900, now = clock.monotonicNanoseconds()
        func keys(initiator: Bool) -> ChannelKeys {
            ChannelKeys(initiatorToResponder: SecretBytes([UInt8](repeating: 1, count: 32)),
                        responderToInitiator: SecretBytes([UInt8](repeating: 2, count: 32)), isInitiator: initiator)
        }
        let writes = HeldWritesHandler()
        let connection = EmbeddedChannel(handler: writes)
        activate(peer, channel: ActiveChannel(keys: keys(initiator: true), localIndex: 11, remoteIndex: 22, locallyInitiated: true,
                                              now: now, tuning: tuning),
                 connection: ChannelConnection(id: id, path: TCPStreamPath(connection), locallyInitiated: true), datagramEndpoint: nil)
        var sender = ActiveChannel(keys: keys(initiator: false), localIndex: 22, remoteIndex: 11, locallyInitiated: false,
                                   now: now, tuning: tuning)
        var sent = 0
        for index in 0..<count {
            let payload = HandshakePayload(sessionIndex: UInt32(100 + index), udpPort: 1, wallNanoseconds: clock.wallNanoseconds(),
                                           isRekey: true)
            guard let frame = try? sender.startRekey(localStatic: peerKeys, peerPublicKey: channels.localKeys.publicKey,
                                                     pairKey: pairKey, newLocalIndex: UInt32(100 + index), payload: payload),
                  handleStreamFrame(Array(frame.dropFirst(2)), from: peer, connectionID: id) else { break }
            sent += 1
        }
        dropChannel(peer, reason: "test over", redial: false)
        connection.close(promise: nil)
        connection.embeddedEventLoop.run()
        return (sent, writes.writes, writes.peakCharge)
    }
}
