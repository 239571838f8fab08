extension DeliveryRouter {
    /// Starts `body` on the router in a task that prefers the router's task executor.
    ///
    /// A plain `Task {}` does not inherit its creator's executor preference: whatever it awaits
    /// outside the router (a store commit's continuation, a nonisolated async call) resumes on
    /// the global pool and hops back to the router's loop from there — a thread hop per await in
    /// a daemon, and a job from another thread in the deterministic simulator, whose run then
    /// depends on real timing. With the preference those steps stay on the router's loop.
    func spawn(_ body: @escaping @Sendable (isolated DeliveryRouter) async -> Void) {
        Task(executorPreference: taskExecutor) { await body(self) }
    }
}
