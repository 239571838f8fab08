extension RelayReceiver {
    mutating func receiveStream(_ envelope: RelayEnvelope) -> [Action] {
        let id = envelope.pathID
        if closedPaths.contains(id) {
            counters.stale += 1
            return []
        }
        tick += 1
        var actions: [Action] = []
        if paths[id] == nil {
            guard envelope.sequence < limits.window else {
                counters.stale += 1
                return []
            }
            if paths.count >= limits.maximumPaths { actions += evictLeastRecentlyActive() }
            paths[id] = Path()
        }
        guard var path = paths[id] else { return actions }
        path.lastActive = tick
        if envelope.sequence < path.next || path.held[envelope.sequence] != nil {
            counters.duplicates += 1
            paths[id] = path
            return actions
        }
        if envelope.sequence - path.next >= limits.window {
            counters.gapsClosed += 1
            return actions + close(id, path, .gap)
        }
        if envelope.sequence > path.next {
            guard bufferedBytes + envelope.payload.count <= limits.maximumBufferedBytes else {
                counters.overflowsClosed += 1
                return actions + close(id, path, .overflow)
            }
            path.held[envelope.sequence] = envelope
            path.heldBytes += envelope.payload.count
            bufferedBytes += envelope.payload.count
            paths[id] = path
            return actions
        }
        // In order: deliver it and everything held right behind it.
        var current = envelope
        while true {
            if current.kind == .streamClose {
                return actions + close(id, path, .remote)
            }
            if !path.announced {
                path.announced = true
                actions.append(.opened(id))
            }
            actions.append(.streamData(id, current.payload))
            path.next += 1
            guard let following = path.held.removeValue(forKey: path.next) else { break }
            path.heldBytes -= following.payload.count
            bufferedBytes -= following.payload.count
            current = following
        }
        paths[id] = path
        return actions
    }

    private mutating func evictLeastRecentlyActive() -> [Action] {
        guard let (id, path) = paths.min(by: { $0.value.lastActive < $1.value.lastActive }) else { return [] }
        counters.evicted += 1
        return close(id, path, .evicted)
    }

    /// Removes `path`, remembers it as closed, and says so if the caller knew of it.
    private mutating func close(_ id: RelayPathID, _ path: Path, _ reason: CloseReason) -> [Action] {
        paths[id] = path  // the caller's copy is the current one: forget releases what it still holds
        forget(id)
        return path.announced ? [.closed(id, reason)] : []
    }

    /// Whether some path holds messages behind a missing one.
    var hasHoles: Bool { paths.values.contains { !$0.held.isEmpty } }

    /// Paths holding messages behind a missing one.
    var pathsWithHoles: [RelayPathID] { paths.compactMap { $0.value.held.isEmpty ? nil : $0.key } }

    /// `id` waited too long for a missing message (a broker that dropped a QoS 1 message): it
    /// closes as for a gap, counted there, and its late messages are dropped.
    mutating func closeForHole(_ id: RelayPathID) {
        guard let path = paths[id] else { return }
        counters.gapsClosed += 1
        _ = close(id, path, .gap)
    }

    mutating func forget(_ id: RelayPathID) {
        if let path = paths.removeValue(forKey: id) { bufferedBytes -= path.heldBytes }
        closedPaths.append(id)
        if closedPaths.count > limits.rememberedClosedPaths { closedPaths.removeFirst(closedPaths.count - limits.rememberedClosedPaths) }
    }
}
