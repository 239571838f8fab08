#if canImport(Glibc)
import Glibc
#endif
import MeshLocalAPI
import NIOCore
import NIOPosix
import Testing
@testable import MeshDaemon

/// `SocketDescriptor.of`: the descriptor found for a channel is that channel's socket (the
/// daemon writes to it directly), not another socket of the process.
@Suite("Socket descriptors of NIO channels")
struct SocketDescriptorTests {
    /// The local port of `descriptor`'s socket.
    private func port(of descriptor: CInt) -> Int? {
        var storage = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { return nil }
        return Int(UInt16(bigEndian: storage.sin_port))
    }

    @Test func eachChannelGetsItsOwnSocket() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        var channels: [any Channel] = []
        defer { for channel in channels { try? channel.close().wait() } }
        for _ in 0..<4 {
            channels.append(try DatagramBootstrap(group: group).bind(host: "127.0.0.1", port: 0).wait())
        }
        var seen: Set<CInt> = []
        for channel in channels {
            let descriptor = try channel.eventLoop.submit { SocketDescriptor.of(channel) }.wait()
            let found = try #require(descriptor, "no descriptor found for \(channel)")
            #expect(port(of: found) == channel.localAddress?.port)
            seen.insert(found)
        }
        #expect(seen.count == channels.count)
    }

    @Test func offTheChannelsLoopThereIsNoAnswer() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let channel = try DatagramBootstrap(group: group).bind(host: "127.0.0.1", port: 0).wait()
        defer { try? channel.close().wait() }
        #expect(SocketDescriptor.of(channel) == nil)
    }
}
