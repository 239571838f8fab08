import MeshCore

/// The tasks performing local API requests (`LocalAPIDispatcher.start`), from any connection on
/// any loop, until each ends: the server's `shutdown()` cancels and awaits those still running
/// after it closed the connections, so no request outlives the server unnoticed. A connection
/// that closes cancels its own requests' tasks at once (`LocalAPIConnectionHandler`).
final class LocalAPIRequestTasks: Sendable {
    private let running = Locked(TrackedTasks())

    /// Starts `body` in a task preferring `executor` (nil: none), tracked until it ends.
    func start(executorPreference executor: (any TaskExecutor)?,
               _ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        // Under the lock until the task is stored, so its `ended` (which takes the lock) comes after.
        running.withLock { tasks in
            tasks.add { id in
                Task(executorPreference: executor) {
                    await body()
                    self.running.withLock { $0.ended(id) }
                }
            }
        }
    }

    /// Cancels every running task and awaits it, and those started meanwhile (at most 100
    /// rounds: the server stopped accepting requests before it calls this).
    func stopAll() async {
        for _ in 0..<100 {
            let tasks = running.withLock { $0.takeAll() }
            guard !tasks.isEmpty else { return }
            for task in tasks { await task.value }
        }
    }
}
