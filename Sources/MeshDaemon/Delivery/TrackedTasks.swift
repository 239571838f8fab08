/// The tasks an actor started and has not seen end, by id, so that it can cancel and await them
/// when it stops (no task outlives its owner unnoticed). The owner adds a task when it starts
/// one and calls `ended` from the task's last step (on the owner, so `add` has stored it).
struct TrackedTasks: Sendable {
    private var running: [UInt64: Task<Void, Never>] = [:]
    private var nextID: UInt64 = 0

    /// How many run.
    var count: Int { running.count }

    /// Stores the task `start` makes for a fresh id (which the task passes to `ended`), and returns it.
    @discardableResult
    mutating func add(_ start: (UInt64) -> Task<Void, Never>) -> Task<Void, Never> {
        let id = nextID
        nextID &+= 1
        let task = start(id)
        running[id] = task
        return task
    }

    /// The task `id` ended (an id `takeAll` took already is ignored).
    mutating func ended(_ id: UInt64) {
        running[id] = nil
    }

    /// Every running task, cancelled, and forgotten here: the caller awaits them.
    mutating func takeAll() -> [Task<Void, Never>] {
        let tasks = running.sorted { $0.key < $1.key }.map(\.value)
        running.removeAll()
        for task in tasks { task.cancel() }
        return tasks
    }
}

extension DeliveryRouter {
    /// Starts `body` on the router in a task that prefers the router's task executor, tracked
    /// until it ends: `run()` cancels and awaits every such task before the store's committer
    /// shuts down. The router's only way to start work it does not await itself.
    ///
    /// A plain `Task {}` does not inherit its creator's executor preference: whatever it awaits
    /// outside the router (a store commit's continuation, a nonisolated async call) resumes on
    /// the global pool and hops back to the router's loop from there — a thread hop per await in
    /// a daemon, and a job from another thread in the deterministic simulator, whose run then
    /// depends on real timing. With the preference those steps stay on the router's loop.
    func spawn(_ body: @escaping @Sendable (isolated DeliveryRouter) async -> Void) {
        tasks.add { id in
            Task(executorPreference: taskExecutor) { await self.runTracked(id, body) }
        }
    }

    /// `spawn` for code outside the router (a local API connection): on the router's loop at
    /// once, from another thread through the loop. The task is tracked like the router's own.
    nonisolated func spawnTracked(_ body: @escaping @Sendable (isolated DeliveryRouter) async -> Void) {
        if loop.inEventLoop {
            onLoop { $0.spawn(body) }
        } else {
            loop.execute { self.onLoop { $0.spawn(body) } }
        }
    }

    private func runTracked(_ id: UInt64, _ body: @Sendable (isolated DeliveryRouter) async -> Void) async {
        await body(self)
        tasks.ended(id)
    }

    /// The router stops: cancels and awaits its tasks, and those they start meanwhile (at most
    /// 1 000 rounds; a task that starts another one every round is a bug).
    func stopTasks() async {
        for _ in 0..<1_000 {
            let running = tasks.takeAll()
            guard !running.isEmpty else { return }
            for task in running { await task.value }
        }
        logger.error("delivery router tasks still starting others when it stopped", metadata: ["tasks": "\(tasks.count)"])
    }
}
