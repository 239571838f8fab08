#if canImport(Glibc)
import Glibc
#endif
import Foundation
import NIOCore
import NIOPosix

/// The relay floor with NIO: app → Unix socket → relay A → loopback UDP → relay B → Unix socket
/// → app, where each relay is one NIO event loop thread with a handler that only passes the
/// bytes on (no framing, no crypto, no router) — `scripts/latency-floor.c`'s path through the
/// same event loop machinery `meshd` uses. The gap between this and the C relay is NIO's own
/// cost per wake-up; the gap between this and meshd's lean-app latency is meshd's code.
///
/// The app is this thread with blocking sockets, timed as `BlockingDeliveryProbe` times meshd.
enum NIORelayProbe {
    /// Relay A: each read from the app's socket leaves as one datagram to relay B.
    private final class ForwardToDatagram: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        let udp: any Channel
        let destination: SocketAddress
        init(udp: any Channel, destination: SocketAddress) {
            self.udp = udp
            self.destination = destination
        }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            udp.writeAndFlush(AddressedEnvelope(remoteAddress: destination, data: unwrapInboundIn(data)), promise: nil)
        }
    }

    /// Relay B: each datagram goes on to the app's socket.
    private final class ForwardToStream: ChannelInboundHandler {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let stream: any Channel
        init(stream: any Channel) { self.stream = stream }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            stream.writeAndFlush(unwrapInboundIn(data).data, promise: nil)
        }
    }

    /// Drops what it reads (relay A's UDP socket only sends).
    private final class Discard: ChannelInboundHandler {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
    }

    /// One-way times in nanoseconds, `count` samples after `warmup`.
    static func oneWay(count: Int, warmup: Int, payloadBytes: Int) throws -> [UInt64] {
        var toA: [CInt] = [0, 0], fromB: [CInt] = [0, 0]
        guard socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue), 0, &toA) == 0 else { throw BenchError("NIO relay probe: socketpair failed") }
        guard socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue), 0, &fromB) == 0 else {
            close(toA[0]); close(toA[1])
            throw BenchError("NIO relay probe: socketpair failed")
        }
        let relayA = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let relayB = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var channels: [any Channel] = []
        defer {
            for channel in channels { try? channel.close().wait() }
            try? relayA.syncShutdownGracefully()
            try? relayB.syncShutdownGracefully()
            close(toA[0]); close(fromB[0])
        }
        // The relays' ends of the socket pairs are the channels' from here on (closed with them).
        let outB = try ClientBootstrap(group: relayB).withConnectedSocket(fromB[1]).wait()
        channels.append(outB)
        let udpB = try DatagramBootstrap(group: relayB)
            .channelInitializer { $0.pipeline.addHandler(ForwardToStream(stream: outB)) }
            .bind(host: "127.0.0.1", port: 0).wait()
        channels.append(udpB)
        let udpA = try DatagramBootstrap(group: relayA)
            .channelInitializer { $0.pipeline.addHandler(Discard()) }
            .bind(host: "127.0.0.1", port: 0).wait()
        channels.append(udpA)
        guard let destination = udpB.localAddress else { throw BenchError("NIO relay probe: relay B has no address") }
        let inA = try ClientBootstrap(group: relayA)
            .channelInitializer { $0.pipeline.addHandler(ForwardToDatagram(udp: udpA, destination: destination)) }
            .withConnectedSocket(toA[1]).wait()
        channels.append(inA)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fromB[0], SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        var samples: [UInt64] = []
        samples.reserveCapacity(count)
        var message = [UInt8](repeating: 0x42, count: payloadBytes)
        for index in 0..<(count + warmup) {
            let start = DispatchTime.now().uptimeNanoseconds
            guard message.withUnsafeBytes({ write(toA[0], $0.baseAddress, $0.count) }) == payloadBytes else {
                throw BenchError("NIO relay probe: write failed")
            }
            var got = 0
            while got < payloadBytes {
                let n = message.withUnsafeMutableBytes { recv(fromB[0], $0.baseAddress! + got, payloadBytes - got, 0) }
                guard n > 0 else { throw BenchError("NIO relay probe: nothing came through within 5 s") }
                got += n
            }
            if index >= warmup { samples.append(DispatchTime.now().uptimeNanoseconds - start) }
        }
        return samples
    }
}
