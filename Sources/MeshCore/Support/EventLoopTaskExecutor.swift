import NIOCore

/// Runs Swift tasks on one NIO event loop.
///
/// `meshd` runs each node — its actor, its socket loops, its dial jobs — on one event loop: no
/// thread hops between a socket read and the actor that handles it, and no dependence on Swift's
/// cooperative pool, which CPU-heavy work elsewhere in the process can occupy for seconds.
/// `MeshClient.taskExecutor` hands one out for a client's connection, so an app can run its
/// sends and its event loop on the thread that does the socket I/O.
///
/// A job enqueued from the loop itself costs no wake-up; from another thread it costs one.
public final class EventLoopTaskExecutor: TaskExecutor, @unchecked Sendable {
    /// The loop jobs run on. (`@unchecked Sendable`: the only state is this immutable,
    /// thread-safe reference.)
    public let loop: any EventLoop

    /// An executor for `loop`.
    public init(_ loop: any EventLoop) { self.loop = loop }

    /// Runs `job` on the loop (in order with the loop's other tasks).
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
