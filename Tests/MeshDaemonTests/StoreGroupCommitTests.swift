import Foundation
import NIOCore
import NIOPosix
import Testing
@testable import MeshDaemon

@Suite("DeliveryStore group commit")
struct StoreGroupCommitTests {
    @Test func concurrentSendersEachKeepTheirOrderAndEverythingIsDurable() async throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        let committer = StoreGroupCommitter(store: store)
        let senders = 16, perSender = 25
        let receipts = try await withThrowingTaskGroup(of: [OutboxReceipt].self) { group in
            for sender in 0..<senders {
                group.addTask {
                    var receipts: [OutboxReceipt] = []
                    for i in 0..<perSender {
                        receipts.append(try await committer.enqueue(peer: "A", item: makeOutboxItem(sender * 1_000 + i)))
                    }
                    return receipts
                }
            }
            return try await group.reduce(into: [[OutboxReceipt]]()) { $0.append($1) }
        }
        committer.shutdown()
        for own in receipts { #expect(zip(own, own.dropFirst()).allSatisfy { $0.sequence < $1.sequence }) }
        #expect(Set(receipts.joined().map(\.sequence)) == Set(1...UInt64(senders * perSender)))
        store.close()

        let reopened = try DeliveryStore.open(path: dir.path())
        let entries = try reopened.outbox.pending(peer: "A", limit: 10_000)
        #expect(entries.count == senders * perSender)
        for sender in 0..<senders {
            let own = entries.map { payloadIndex($0.item.payload) }.filter { $0 / 1_000 == sender }
            #expect(own == (0..<perSender).map { sender * 1_000 + $0 })
        }
    }

    @Test func aWriteOverALimitFailsAloneAndOthersInTheGroupCommit() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(maxOutboxBytesPerPeer: 100))
        let duplicate = makeInboxItem(7)
        let results = store.commitGroup([
            .outbox(peer: "A", item: makeOutboxItem(1, size: 50)),
            .outbox(peer: "A", item: makeOutboxItem(2, size: 60)),
            .outbox(peer: "A", item: makeOutboxItem(3, size: 50)),
            .inbox(peer: "B", item: duplicate, at: storeTestEpoch),
            .inbox(peer: "B", item: duplicate, at: storeTestEpoch),
        ])
        #expect(results.map { (try? $0.get()) != nil } == [true, false, true, true, true])
        if case .failure(let error) = results[1] { #expect(error.limit == .outboxBytesPerPeer(100)) }
        if case .success(.inbox(let receipt)) = results[4] { #expect(receipt == .duplicate) }
        #expect(try store.outbox.pending(peer: "A").map { payloadIndex($0.item.payload) } == [1, 3])
        #expect(try store.outbox.pending(peer: "A").map(\.sequence) == [1, 2])
        #expect(try store.counts().inbox.items == 1)
    }

    @Test func outboxDeletesShareAGroupWithSendsAndFreeRoomOnceCommitted() async throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(maxOutboxItemsPerPeer: 5))
        for i in 1...5 { _ = try store.outbox.enqueue(peer: "A", item: makeOutboxItem(i)) }
        #expect(throws: StoreError.self) { try store.outbox.enqueue(peer: "A", item: makeOutboxItem(6)) }

        let results = store.commitGroup([
            .outbox(peer: "B", item: makeOutboxItem(100)),
            .acknowledgeOutbox(peer: "A", upTo: 3),
            .acknowledgeOutbox(peer: "B", upTo: 1),
            .acknowledgeOutbox(peer: "A", upTo: 3),
        ])
        let deleted = results.map { result -> Int? in
            if case .success(.acknowledged(let count)) = result { count } else { nil }
        }
        #expect(deleted == [nil, 3, 1, 0], "each delete counts what it removed; a repeat removes nothing")
        #expect(try store.outbox.pending(peer: "A").map { payloadIndex($0.item.payload) } == [4, 5])
        #expect(try store.outbox.pending(peer: "B").isEmpty)
        let counts = try store.counts()
        #expect(counts.outboxByPeer["A"]?.items == 2)
        #expect(counts.outboxByPeer["B"] == nil)

        // The room the deletes made is there for the next send; sequences go on.
        let committer = StoreGroupCommitter(store: store)
        #expect(try await committer.enqueue(peer: "A", item: makeOutboxItem(6)).sequence == 6)
        #expect(try await committer.acknowledgeOutbox(peer: "A", upTo: 5) == 2)
        committer.shutdown()
        await #expect(throws: StoreError.self) { try await committer.acknowledgeOutbox(peer: "A", upTo: 6) }
        store.close()
        let reopened = try DeliveryStore.open(path: dir.path())
        #expect(try reopened.outbox.pending(peer: "A").map(\.sequence) == [6])
    }

    @Test func onAFullDatabaseTheSendsOfTheGroupFailAndItsDeletesStillFreeSpace() throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path(), options: DeliveryStoreOptions(maxDatabaseBytes: 256 << 10))
        var accepted = 0
        for i in 0..<200 {
            guard (try? store.outbox.enqueue(peer: "A", item: makeOutboxItem(i, size: 4_000))) != nil else { break }
            accepted += 1
        }
        #expect(accepted > 10 && accepted < 200, "the file filled up after \(accepted) items")

        let results = store.commitGroup([
            .outbox(peer: "A", item: makeOutboxItem(500, size: 4_000)),
            .acknowledgeOutbox(peer: "A", upTo: 10),
        ])
        guard case .failure(let full) = results[0] else {
            Issue.record("a send into a full file was accepted")
            return
        }
        #expect(full.code == .full)
        guard case .success(.acknowledged(let removed)) = results[1] else {
            Issue.record("the delete failed with the group: \(results[1])")
            return
        }
        #expect(removed == 10)
        #expect(try store.outbox.pending(peer: "A", limit: 1_000).map { payloadIndex($0.item.payload) } == Array(10..<accepted))
        #expect(try store.counts().outboxByPeer["A"]?.items == accepted - 10)
        #expect(try store.integrityCheck() == ["ok"])
    }

    @Test func receiveThroughTheCommitterDedupsAndShutdownRefusesLaterWrites() async throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        let committer = StoreGroupCommitter(store: store, maxBatch: 4)
        let item = makeInboxItem(1)
        #expect(try await committer.receive(from: "A", item: item, at: storeTestEpoch) != .duplicate)
        #expect(try await committer.receive(from: "A", item: item, at: storeTestEpoch) == .duplicate)
        committer.shutdown()
        let error = await #expect(throws: StoreError.self) {
            try await committer.enqueue(peer: "A", item: makeOutboxItem(1))
        }
        #expect(error?.code == .closed)
        #expect(try store.inbox.pending(featureID: "demo").count == 1)
    }

    @Test func theCommitThreadIsNamedSoToolsShowIt() async throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        let committer = StoreGroupCommitter(store: store)
        _ = try await committer.enqueue(peer: "A", item: makeOutboxItem(1))
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        let names = tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        committer.shutdown()
        #expect(names.contains("mesh-commit\n"), "thread names: \(Set(names).sorted())")
    }

    /// The no-suspension form used by the local API's reliable sends: each completion runs on
    /// the loop it names, in submission order, and each item is durable when it runs; after
    /// `shutdown` the completion still runs on the loop, with `.closed`.
    @Test func loopCompletionsRunOnTheirLoopInSubmissionOrder() async throws {
        let dir = try StoreTestDirectory()
        defer { dir.cleanUp() }
        let store = try DeliveryStore.open(path: dir.path())
        let committer = StoreGroupCommitter(store: store)
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let count = 300
        let done = loop.makePromise(of: [(index: Int, sequence: UInt64, onLoop: Bool, durable: Bool)].self)
        try await loop.submit {
            let seen = NIOLoopBoundBox([(index: Int, sequence: UInt64, onLoop: Bool, durable: Bool)](), eventLoop: loop)
            for index in 0..<count {
                committer.enqueue(peer: "A", item: makeOutboxItem(index), on: loop) { result in
                    let sequence = (try? result.get())?.sequence ?? 0
                    let durable = ((try? store.outbox.pending(peer: "A", limit: 10_000)) ?? []).contains { $0.sequence == sequence }
                    seen.value.append((index, sequence, loop.inEventLoop, durable))
                    if seen.value.count == count { done.succeed(seen.value) }
                }
            }
        }.get()
        let results = try await done.futureResult.get()
        #expect(results.map(\.index) == Array(0..<count), "completions out of submission order")
        #expect(results.map(\.sequence) == (1...UInt64(count)).map { $0 })
        #expect(results.allSatisfy { $0.onLoop }, "a completion ran off its loop")
        #expect(results.allSatisfy { $0.durable }, "a completion ran before its item was in the store")

        committer.shutdown()
        let closed = loop.makePromise(of: (code: StoreError.Code?, onLoop: Bool).self)
        committer.enqueue(peer: "A", item: makeOutboxItem(count), on: loop) { result in
            if case .failure(let error) = result { closed.succeed((error.code, loop.inEventLoop)) } else { closed.succeed((nil, loop.inEventLoop)) }
        }
        let refusal = try await closed.futureResult.get()
        #expect(refusal.code == .closed && refusal.onLoop)
        #expect(try store.outbox.pending(peer: "A", limit: 10_000).count == count)
    }
}
