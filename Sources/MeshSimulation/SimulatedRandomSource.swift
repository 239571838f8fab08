import MeshDaemon

/// A daemon incarnation's random bytes (its node's ephemeral keys, session indices and
/// reconnect jitter), drawn from the run's seed instead of libsodium: one seed, one run.
///
/// Used only on the simulation's thread (every job of the node runs on its loop there), hence
/// `@unchecked Sendable`.
final class SimulatedRandomSource: NodeRandomSource, @unchecked Sendable {
    private var random: SimulationRandom

    init(_ random: SimulationRandom) { self.random = random }

    func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var offset = 0
        while offset < buffer.count {
            var word = random.next()
            let count = min(8, buffer.count - offset)
            withUnsafeBytes(of: &word) { bytes in
                for index in 0..<count { buffer[offset + index] = bytes[index] }
            }
            offset += count
        }
    }
}
