/// The transport's own tasks: the event pump (with the reconnect loop that follows a dropped
/// connection) and the ack flusher. Each is tracked from its start to its end; `stop()` cancels
/// and awaits them all, and once the transport is stopped none starts, so nothing of the
/// transport runs after `stop()` returns.
extension DaemonSessionSyncTransport {
    /// Starts `body` as one of the transport's tasks, inside `state`'s lock (`state` is the
    /// locked value). False when the transport was stopped: then nothing runs.
    func track(_ state: inout TransportState, _ body: @escaping @Sendable () async -> Void) -> Bool {
        if case .stopped = state.phase { return false }
        let id = state.nextTaskID
        state.nextTaskID &+= 1
        // The task removes itself at its end; it cannot get there before it is stored (the
        // lock is held until then).
        state.tasks[id] = Task {
            await body()
            self.state.withLock { _ = $0.tasks.removeValue(forKey: id) }
        }
        return true
    }

    /// `track`, taking the lock.
    func spawn(_ body: @escaping @Sendable () async -> Void) -> Bool {
        state.withLock { track(&$0, body) }
    }

    /// Cancels and awaits every task of the transport (call after setting the phase to
    /// `stopped`, so no new one starts meanwhile; a second pass catches one that started
    /// just before).
    func stopTasks() async {
        while true {
            let running: [Task<Void, Never>] = state.withLock { state in
                defer { state.tasks.removeAll() }
                return state.tasks.sorted { $0.key < $1.key }.map(\.value)
            }
            guard !running.isEmpty else { return }
            for task in running { task.cancel() }
            for task in running { await task.value }
        }
    }

    /// How many of the transport's tasks run (for tests).
    var runningTaskCount: Int { state.withLock { $0.tasks.count } }
}
