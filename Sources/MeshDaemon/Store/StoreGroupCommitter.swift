import Foundation
import NIOCore

/// Group commit for concurrent callers: each `enqueue`/`receive` returns only once its item is
/// durable, but all items submitted while a commit is running share the next transaction (one
/// fsync). On a disk with few fsyncs per second this multiplies durable throughput by the
/// number of concurrent senders, with no change in guarantees.
///
/// One dedicated thread does the commits (so fsync never blocks the Swift concurrency pool);
/// it starts with the first write and stops in ``shutdown()``, which must be called before the
/// committer is released. With `inlineOn:` (the deterministic simulator) there is no thread:
/// writes submitted in one turn of that loop are committed together by one flush the loop runs
/// next (`execute`), on the loop's thread. Order: writes are committed in submission order, so per-peer FIFO
/// holds for each caller's awaited sequence of writes. A write refused by a configured limit
/// fails alone with `.full`; a disk or I/O error fails the whole group.
public final class StoreGroupCommitter: @unchecked Sendable {
    private typealias Completion = @Sendable (Result<GroupWriteResult, StoreError>) -> Void

    private let store: DeliveryStore
    private let maxBatch: Int
    private let condition = NSCondition()
    /// `loop`: where the completion runs (nil: on the commit thread, e.g. a continuation's resume).
    private var pending: [(write: GroupWrite, completion: Completion, loop: (any EventLoop)?)] = []
    private var threadStarted = false
    private var stopping = false
    private var stopped = false
    /// Inline mode: the loop whose flush commits what is pending (no commit thread).
    private let inlineLoop: (any EventLoop)?
    private var flushScheduled = false

    /// Creates a committer over `store`; at most `maxBatch` writes go into one transaction.
    public init(store: DeliveryStore, maxBatch: Int = 1_000) {
        self.store = store
        self.maxBatch = max(1, maxBatch)
        self.inlineLoop = nil
    }

    /// A committer without a thread: each group is committed by a flush that `loop` runs
    /// (`execute`) after the writes of the current turn were submitted. For a daemon core
    /// driven by hand on one thread (the simulator); a commit then blocks that loop.
    package init(store: DeliveryStore, maxBatch: Int = 1_000, inlineOn loop: any EventLoop) {
        self.store = store
        self.maxBatch = max(1, maxBatch)
        self.inlineLoop = loop
    }

    /// Queues `item` for `peer` durably, sharing the commit with concurrent callers.
    /// Same semantics and errors as ``StoreOutbox/enqueue(peer:item:)``.
    /// Suspends on the caller's executor (`nonisolated(nonsending)`), so no hop to the shared pool.
    public nonisolated(nonsending) func enqueue(peer: String, item: OutboxItem) async throws -> OutboxReceipt {
        guard case .outbox(let receipt) = try await submit(.outbox(peer: peer, item: item)) else {
            throw mismatch()
        }
        return receipt
    }

    /// Stores a received item durably, sharing the commit with concurrent callers.
    /// Same semantics and errors as ``StoreInbox/receive(from:items:at:storingWhatFits:handedOutFeatures:)`` for one item.
    public nonisolated(nonsending) func receive(from peer: String, item: InboxItem, at time: Date) async throws -> InboxReceipt {
        guard case .inbox(let receipt) = try await submit(.inbox(peer: peer, item: item, at: time)) else {
            throw mismatch()
        }
        return receipt
    }

    /// Deletes `peer`'s outbox items up to `upTo` (the peer daemon stored them), in the next
    /// group commit: the deletes share the fsync of the writes committed with them. Returns how
    /// many items went. Same semantics and errors as ``StoreOutbox/acknowledge(peer:upTo:)``.
    public nonisolated(nonsending) func acknowledgeOutbox(peer: String, upTo: UInt64) async throws -> Int {
        guard case .acknowledged(let count) = try await submit(.acknowledgeOutbox(peer: peer, upTo: upTo)) else {
            throw mismatch()
        }
        return count
    }

    /// Queues `item` for `peer` durably, sharing the commit with concurrent callers, without
    /// suspending: `completion` runs on `loop` once the commit is done (or failed). The
    /// completions of one commit for the same loop run together, in submission order, as one
    /// task of that loop: one wake-up per commit instead of one per write. Same semantics and
    /// errors as ``enqueue(peer:item:)``.
    public func enqueue(peer: String, item: OutboxItem, on loop: any EventLoop,
                        completion: @escaping @Sendable (Result<OutboxReceipt, StoreError>) -> Void) {
        submit(.outbox(peer: peer, item: item), on: loop) { [self] result in
            completion(result.flatMap { written in
                guard case .outbox(let receipt) = written else { return .failure(mismatch()) }
                return .success(receipt)
            })
        }
    }

    /// Commits what is pending, stops the thread and waits for it. Later writes throw `.closed`.
    public func shutdown() {
        if inlineLoop != nil {
            flushInline()
            condition.lock()
            stopping = true
            stopped = true
            condition.unlock()
            return
        }
        condition.lock()
        stopping = true
        condition.broadcast()
        while threadStarted && !stopped { condition.wait() }
        stopped = true
        condition.unlock()
    }

    private nonisolated(nonsending) func submit(_ write: GroupWrite) async throws -> GroupWriteResult {
        let result: Result<GroupWriteResult, StoreError> = await withCheckedContinuation { continuation in
            submit(write, on: nil) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Queues `write`; `completion` runs on `loop` (nil: on the commit thread) when it is done.
    private func submit(_ write: GroupWrite, on loop: (any EventLoop)?, completion: @escaping Completion) {
        condition.lock()
        defer { condition.unlock() }
        if stopping {
            let closed = StoreError(code: .closed, operation: "group commit", path: store.path,
                                    detail: "the committer was shut down")
            if let loop { loop.execute { completion(.failure(closed)) } } else { completion(.failure(closed)) }
            return
        }
        pending.append((write, completion, loop))
        if let inlineLoop {
            guard !flushScheduled else { return }
            flushScheduled = true
            inlineLoop.execute { [self] in flushInline() }
            return
        }
        if !threadStarted {
            threadStarted = true
            let thread = Thread { [self] in
                // Named from inside through procfs (`Thread.name` set before `start()` never
                // reached the kernel here, and glibc's `pthread_setname_np` is not visible
                // to Swift): without it the thread kept its creator's name, e.g. the event
                // loop's, in `top -H` and `perf`. Linux keeps at most 15 bytes.
                if let comm = fopen("/proc/thread-self/comm", "w") {
                    fputs("mesh-commit", comm)
                    fclose(comm)
                }
                run()
            }
            thread.start()
        }
        // The commit thread waits only while nothing is pending: a write behind others finds it
        // awake already (a signal per write cost a futex call each under load).
        if pending.count == 1 { condition.signal() }
    }

    /// The commit thread: takes everything pending (up to `maxBatch`), commits it, completes it.
    private func run() {
        while true {
            condition.lock()
            while pending.isEmpty && !stopping { condition.wait() }
            if pending.isEmpty {
                stopped = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let taken = Array(pending.prefix(maxBatch))
            pending.removeFirst(taken.count)
            condition.unlock()
            let results = store.commitGroup(taken.map(\.write))
            Self.complete(taken, with: results)
        }
    }

    /// Inline mode: commits everything pending, `maxBatch` at a time, on the caller's thread.
    private func flushInline() {
        while true {
            condition.lock()
            flushScheduled = false
            guard !pending.isEmpty else {
                condition.unlock()
                return
            }
            let taken = Array(pending.prefix(maxBatch))
            pending.removeFirst(taken.count)
            condition.unlock()
            Self.complete(taken, with: store.commitGroup(taken.map(\.write)))
        }
    }

    /// Runs the completions of one commit: those without a loop here, those of each loop in
    /// one task of that loop.
    private static func complete(_ taken: [(write: GroupWrite, completion: Completion, loop: (any EventLoop)?)],
                                 with results: [Result<GroupWriteResult, StoreError>]) {
        var onLoops: [(loop: any EventLoop, calls: [@Sendable () -> Void])] = []
        for (request, result) in zip(taken, results) {
            guard let loop = request.loop else {
                request.completion(result)
                continue
            }
            let completion = request.completion
            if let index = onLoops.firstIndex(where: { $0.loop === loop }) {
                onLoops[index].calls.append { completion(result) }
            } else {
                onLoops.append((loop, [{ completion(result) }]))
            }
        }
        for (loop, calls) in onLoops {
            loop.execute { for call in calls { call() } }
        }
    }

    private func mismatch() -> StoreError {
        StoreError(code: .internalError, operation: "group commit", path: store.path, detail: "result of the wrong kind")
    }
}
