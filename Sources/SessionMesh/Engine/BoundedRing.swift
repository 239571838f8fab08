/// A fixed-capacity FIFO that overwrites its oldest element when full. Internal building block
/// for the engine's dedup memory and history.
@usableFromInline
struct BoundedRing<Element> {
    @usableFromInline var storage: [Element?]
    @usableFromInline var head = 0
    @usableFromInline var count = 0
    @usableFromInline let capacity: Int

    @inlinable
    init(capacity: Int) {
        self.capacity = capacity
        storage = []
    }

    /// Appends `element`; returns the element it evicted, if the ring was full.
    @inlinable @discardableResult
    mutating func append(_ element: Element) -> Element? {
        guard capacity > 0 else { return element }
        if storage.count < capacity {
            storage.append(element)
            count += 1
            return nil
        }
        let evicted = storage[head]
        storage[head] = element
        head = (head + 1) % capacity
        return evicted
    }

    /// Elements oldest first.
    @inlinable
    var elements: [Element] {
        var out: [Element] = []
        out.reserveCapacity(count)
        forEach { out.append($0) }
        return out
    }

    /// Visits elements oldest first.
    @inlinable
    func forEach(_ body: (Element) throws -> Void) rethrows {
        if storage.count < capacity {
            for e in storage { if let e { try body(e) } }
        } else {
            for i in 0..<capacity { if let e = storage[(head + i) % capacity] { try body(e) } }
        }
    }
}
extension BoundedRing: Sendable where Element: Sendable {}
