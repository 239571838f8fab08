import NIOCore
import NIOEmbedded
import Testing
@testable import MeshDaemon

/// The deadlines of connections that have not authenticated, as `ConnectionTable` keeps them,
/// on virtual time: an embedded loop advanced by hand fires the timers, and the table says
/// whether a fired deadline closes its connection.
@Suite("Node connection deadlines")
struct ConnectionDeadlineTests {
    /// The table and what the fired deadlines did, shared with the timers' closures.
    final class Bed {
        var table = ConnectionTable(tuning: ChannelTuning())
        var closed: [UInt64] = []
        let loop = EmbeddedEventLoop()

        func admit() -> UInt64? {
            guard case .admitted(let id, _) = table.admit(TCPStreamPath(EmbeddedChannel()), source: "10.0.0.1", known: false, now: 0) else {
                return nil
            }
            return id
        }

        /// Arms `id`'s deadline `seconds` from now, as the node does.
        func arm(_ id: UInt64, seconds: Int64) {
            let timer = loop.scheduleTask(in: .seconds(seconds)) { [self] in
                if table.deadlinePassed(id) { closed.append(id) }
            }
            table.setDeadline(id, timer)?.cancel()
        }
    }

    @Test("a deadline closes its connection when it fires first; re-arming replaces it")
    func firesAndReplaces() throws {
        let bed = Bed()
        let a = try #require(bed.admit()), b = try #require(bed.admit())
        bed.arm(a, seconds: 5)
        bed.arm(b, seconds: 5)
        bed.loop.advanceTime(by: .seconds(3))
        bed.arm(b, seconds: 10)     // b answered its first message: a new, later deadline
        bed.loop.advanceTime(by: .seconds(2))
        #expect(bed.closed == [a])
        bed.loop.advanceTime(by: .seconds(7))
        #expect(bed.closed == [a])
        bed.loop.advanceTime(by: .seconds(1))
        #expect(bed.closed == [a, b])
        // A fired deadline is gone: nothing left to cancel.
        #expect(bed.table.dropDeadline(a) == nil && bed.table.dropDeadline(b) == nil)
    }

    @Test("authenticating, ending or evicting a connection hands back its deadline, which then closes nothing")
    func handedBack() throws {
        let bed = Bed()
        let a = try #require(bed.admit()), b = try #require(bed.admit()), c = try #require(bed.admit())
        for id in [a, b, c] { bed.arm(id, seconds: 5) }
        let timers = [bed.table.authenticated(a), bed.table.ended(b), bed.table.dropDeadline(c)]
        #expect(timers.allSatisfy { $0 != nil })
        #expect(bed.table.authenticated(a) == nil && bed.table.ended(b) == nil)
        // Not cancelled (as if the node had failed to): the table still refuses to close.
        bed.loop.advanceTime(by: .seconds(60))
        #expect(bed.closed.isEmpty)
        let passed = bed.table.deadlinePassed(a)
        #expect(!passed)
    }
}
