import CSQLite

/// Gives the process's free heap back to the system (glibc's `malloc_trim`, through the C shim
/// of `CSQLite`, which the Glibc module does not import). The node calls it after a peer's
/// outbound queue drained or closed; the store after a burst (`DeliveryStore.releaseMemory`).
enum HeapRelease {
    /// Returns free heap at the top of the allocator's arenas to the system; true when some
    /// was released. Walks the arenas, so it costs a few milliseconds on a large heap: call it
    /// after a burst, not per message.
    @discardableResult
    static func trim() -> Bool { meshd_trim_heap() == 1 }
}
