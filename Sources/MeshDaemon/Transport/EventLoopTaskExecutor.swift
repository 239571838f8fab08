import NIOCore

/// Runs Swift tasks on one NIO event loop.
///
/// A node runs everything — its actor, its socket loops, its dial jobs — on one event loop:
/// no thread hops between a socket read and the actor that handles it, and no dependence on
/// Swift's cooperative pool, which CPU-heavy work elsewhere in the process (a benchmark, a
/// test) can occupy for seconds.
final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    /// The loop jobs run on. (`@unchecked Sendable`: the only state is this immutable,
    /// thread-safe reference.)
    let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
