import NIOCore

/// A repeating timer on an event loop: the node's timer pass and discovery's maintenance pass.
/// The loop is the scheduler: the node's loop in production, a testing loop advanced by hand
/// (virtual time) in tests.
struct LoopTicker {
    /// Runs `tick` on `loop` every `interval`, the first time one interval from now, until
    /// `tick` returns false or the returned task is cancelled.
    static func start(on loop: any EventLoop, every interval: TimeAmount,
                      _ tick: @escaping @Sendable () -> Bool) -> RepeatedTask {
        loop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { task in
            if !tick() { task.cancel() }
        }
    }

    /// The node's timer pass interval: a quarter of the keepalive interval, within 20…250 ms.
    static func timerPassInterval(keepalive seconds: Double) -> TimeAmount {
        .nanoseconds(Int64(clamping: Nanoseconds.from(seconds: max(0.02, min(0.25, seconds / 4)))))
    }
}
