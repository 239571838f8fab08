import Foundation
import NIOCore

/// A NIO event loop on virtual time, run by hand on one thread: one per simulated daemon.
///
/// Jobs (`execute`, and through `NIOSerialEventLoopExecutor` every job of an actor or task that
/// uses this loop as its executor) wait in FIFO order until `runUntilIdle()`; scheduled tasks wait
/// until the simulation moves `VirtualClock` past their deadline and calls `fireDue()`. Nothing
/// runs by itself, nothing reads the real clock, so a seed replays the same interleaving.
/// (`EmbeddedEventLoop` cannot serve here: it refuses to be a `SerialExecutor`.)
///
/// A crashed daemon's loop is `abandon()`ed: queued jobs and timers are dropped and whatever is
/// handed to it later is ignored, as if the process were gone.
public final class SimulatedEventLoop: EventLoop, NIOSerialEventLoopExecutor, @unchecked Sendable {
    private struct Timer {
        let deadline: UInt64
        let order: UInt64
        let id: UInt64
        let run: () -> Void
        let fail: (any Error) -> Void
    }

    /// The clock all loops of one simulation share.
    public let clock: VirtualClock
    private var jobs: [() -> Void] = []
    private var jobHead = 0
    private var timers: [Timer] = []
    private var nextOrder: UInt64 = 0
    private(set) public var abandoned = false
    /// Jobs run so far (for the run summary and runaway detection).
    private(set) public var jobsRun: UInt64 = 0

    /// A loop reading `clock`.
    public init(clock: VirtualClock) {
        self.clock = clock
    }

    /// True on the simulation's thread (the one that created the loop), where all its jobs run.
    public var inEventLoop: Bool { pthread_equal(owner, pthread_self()) != 0 }

    /// Now on the virtual clock, as a NIO deadline.
    public var now: NIODeadline { .uptimeNanoseconds(clock.nanoseconds) }

    /// The thread the simulation runs on (the one that created the loop).
    private let owner = pthread_self()
    /// Jobs handed in from another thread (a blocking call that finished elsewhere, a real-time
    /// sleep): each makes the run depend on real timing. Such jobs still run, in arrival order.
    public private(set) var foreignJobs = 0
    private let foreignLock = NSLock()
    private var foreign: [() -> Void] = []

    /// Queues `task` to run at the next `runUntilIdle()`.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        queue(task) { "foreign job:\n" + Thread.callStackSymbols.prefix(14).joined(separator: "\n") }
    }

    /// Queues `task`; from another thread into `foreign` (described under `MESH_SIM_DEBUG_FOREIGN`).
    private func queue(_ task: @escaping @Sendable () -> Void, describeForeign: () -> String) {
        guard pthread_equal(owner, pthread_self()) != 0 else {
            foreignLock.withLock { foreign.append(task) }
            if Self.debugForeign { print(describeForeign()) }
            return
        }
        guard !abandoned else { return }
        jobs.append(task)
    }

    /// Queues a job of an actor or task that runs on this loop (as NIO's default does). Under
    /// `MESH_SIM_DEBUG_FOREIGN`, a job handed in from another thread is described by where its
    /// task resumes: a task that started without this loop as its executor preference (a plain
    /// `Task {}`), awaited something outside its actor and resumed on the global pool.
    public func enqueue(_ job: consuming ExecutorJob) {
        let unownedJob = UnownedJob(job)
        queue({ unownedJob.runSynchronously(on: self.asUnownedSerialExecutor()) }) {
            "foreign job: " + Self.resumePoint(of: unownedJob)
        }
    }

    private static let debugForeign = ProcessInfo.processInfo.environment["MESH_SIM_DEBUG_FOREIGN"] != nil

    /// The function a job resumes in, as "file+offset" for `addr2line -f -C -e file offset`.
    /// Debugging aid only: reads the job header of Swift 6's runtime (the resume function
    /// follows the heap object header, two scheduler words, flags and id, and two reserved
    /// words: byte offset 56 of every job, which is at least 64 bytes long), and finds the
    /// mapped file in /proc/self/maps.
    private static func resumePoint(of job: UnownedJob) -> String {
        let header = unsafeBitCast(job, to: UnsafeRawPointer.self)
        let resume = header.load(fromByteOffset: 56, as: UInt.self)
        let maps = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
        for line in maps.split(separator: "\n") {
            // start-end perms offset dev inode path
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, let dash = fields[0].firstIndex(of: "-"),
                  let start = UInt(fields[0][..<dash], radix: 16),
                  let end = UInt(fields[0][fields[0].index(after: dash)...], radix: 16),
                  let offset = UInt(fields[2], radix: 16), start <= resume, resume < end else { continue }
            return "resumes in \(fields[5])+0x\(String(resume - start + offset, radix: 16))"
        }
        return "resumes at 0x" + String(resume, radix: 16)
    }

    /// Moves jobs that arrived from other threads into the queue.
    private func takeForeign() {
        let arrived: [() -> Void] = foreignLock.withLock {
            defer { foreign.removeAll() }
            return foreign
        }
        guard !arrived.isEmpty, !abandoned else { return }
        foreignJobs += arrived.count
        jobs.append(contentsOf: arrived)
    }

    @discardableResult
    public func scheduleTask<T>(deadline: NIODeadline, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        let promise: EventLoopPromise<T> = makePromise()
        guard !abandoned else {
            promise.fail(EventLoopError.cancelled)
            return Scheduled(promise: promise, cancellationTask: {})
        }
        nextOrder &+= 1
        let id = nextOrder
        let timer = Timer(deadline: max(deadline.uptimeNanoseconds, clock.nanoseconds), order: nextOrder, id: id,
                          run: {
                              do { promise.assumeIsolated().succeed(try task()) } catch { promise.fail(error) }
                          },
                          fail: { promise.fail($0) })
        insert(timer)
        return Scheduled(promise: promise, cancellationTask: { [weak self] in
            self?.timers.removeAll { $0.id == id }
        })
    }

    @discardableResult
    public func scheduleTask<T>(in delay: TimeAmount, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        let base = clock.nanoseconds
        let delta = UInt64(max(delay.nanoseconds, 0))
        let (sum, overflow) = base.addingReportingOverflow(delta)
        return scheduleTask(deadline: .uptimeNanoseconds(overflow ? UInt64(Int64.max) : min(sum, UInt64(Int64.max))), task)
    }

    /// Sorted insert: earliest deadline first, then scheduling order (stable, deterministic).
    private func insert(_ timer: Timer) {
        var low = 0, high = timers.count
        while low < high {
            let mid = (low + high) / 2
            let other = timers[mid]
            if other.deadline < timer.deadline || (other.deadline == timer.deadline && other.order < timer.order) {
                low = mid + 1
            } else {
                high = mid
            }
        }
        timers.insert(timer, at: low)
    }

    /// The earliest timer's deadline, nil when none is armed (or the loop was abandoned).
    public var nextDeadline: UInt64? { abandoned ? nil : timers.first?.deadline }

    /// Whether jobs wait to run.
    public var hasJobs: Bool {
        takeForeign()
        return !abandoned && jobHead < jobs.count
    }

    /// Runs queued jobs, and the jobs they queue, until none is left or `limit` ran. Returns
    /// false when the limit stopped it (a job that re-queues itself forever).
    @discardableResult
    public func runUntilIdle(limit: Int = 200_000) -> Bool {
        takeForeign()
        var ran = 0
        while !abandoned, jobHead < jobs.count {
            guard ran < limit else { return false }
            let job = jobs[jobHead]
            jobHead += 1
            ran += 1
            jobsRun &+= 1
            job()
            if jobHead > 1024, jobHead * 2 > jobs.count {
                jobs.removeFirst(jobHead)
                jobHead = 0
            }
        }
        if jobHead == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            jobHead = 0
        }
        return true
    }

    /// Moves every timer due at the clock's current time into the job queue, in deadline order,
    /// and runs the jobs. Returns false when `runUntilIdle`'s limit was hit.
    @discardableResult
    public func fireDue(limit: Int = 200_000) -> Bool {
        var budget = limit
        while !abandoned, let first = timers.first, first.deadline <= clock.nanoseconds, budget > 0 {
            timers.removeFirst()
            budget -= 1
            first.run()
            guard runUntilIdle(limit: limit) else { return false }
        }
        return runUntilIdle(limit: limit)
    }

    /// The daemon crashed: drop everything queued and ignore whatever comes later.
    public func abandon() {
        abandoned = true
        jobs.removeAll()
        jobHead = 0
        let dropped = timers
        timers.removeAll()
        // A promise dropped unfulfilled traps in debug builds (NIO's leak check): fail them.
        for timer in dropped { timer.fail(EventLoopError.cancelled) }
    }

    public func shutdownGracefully(queue: DispatchQueue, _ callback: @escaping @Sendable ((any Error)?) -> Void) {
        abandon()
        queue.async { callback(nil) }
    }

    public func preconditionInEventLoop(file: StaticString, line: UInt) {}

    public func preconditionNotInEventLoop(file: StaticString, line: UInt) {
        preconditionFailure("SimulatedEventLoop: everything runs on the simulation's thread", file: file, line: line)
    }

    public func _preconditionSafeToWait(file: StaticString, line: UInt) {
        preconditionFailure("SimulatedEventLoop: waiting on a future would block the simulation", file: file, line: line)
    }
}

/// Tasks the simulation starts prefer the loop, so they never touch the global executor.
extension SimulatedEventLoop: TaskExecutor {
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor { UnownedTaskExecutor(ordinary: self) }
}
