import Foundation

/// The realtime items waiting for their ack, in the order their deadlines expire: what the
/// router's ack watchdog walks.
///
/// Deadlines differ per peer (RTT, adaptive floor) and even go down for one peer (the floor
/// shrinks with every ack in time), so a plain FIFO would let an expired item wait behind one
/// with a later deadline. An entry whose deadline is not earlier than the last one queued — the
/// common case of one peer at a steady deadline — is appended to a FIFO, as cheap as before;
/// any other goes into a binary min-heap. The earliest entry is the earlier of the two heads.
///
/// Entries stay when their item is acked or falls back otherwise: the watchdog skips those
/// whose item no longer waits with that deadline (lazy deletion).
struct RealtimeAckTimeline: Sendable {
    struct Entry: Sendable, Equatable {
        var deadline: UInt64
        var eventID: UUID
    }

    private var fifo: [Entry] = []
    private var fifoHead = 0
    private var heap: [Entry] = []

    var isEmpty: Bool { fifoHead == fifo.count && heap.isEmpty }

    /// Entries held, acked ones included (for tests and counters).
    var count: Int { fifo.count - fifoHead + heap.count }

    mutating func insert(_ eventID: UUID, deadline: UInt64) {
        let entry = Entry(deadline: deadline, eventID: eventID)
        if fifoHead == fifo.count {
            fifo.removeAll(keepingCapacity: true)
            fifoHead = 0
            fifo.append(entry)
        } else if let last = fifo.last, deadline >= last.deadline {
            fifo.append(entry)
        } else {
            pushHeap(entry)
        }
    }

    /// The entry with the earliest deadline (the FIFO's on a tie).
    var earliest: Entry? {
        let first = fifoHead < fifo.count ? fifo[fifoHead] : nil
        guard let top = heap.first else { return first }
        guard let first else { return top }
        return top.deadline < first.deadline ? top : first
    }

    /// Removes `earliest`.
    mutating func removeEarliest() {
        if let top = heap.first, fifoHead == fifo.count || top.deadline < fifo[fifoHead].deadline {
            popHeap()
            return
        }
        guard fifoHead < fifo.count else { return }
        fifoHead += 1
        if fifoHead > 1024 && fifoHead * 2 > fifo.count {
            fifo.removeFirst(fifoHead)
            fifoHead = 0
        }
    }

    mutating func removeAll() {
        fifo.removeAll(keepingCapacity: fifo.count <= 4096)
        fifoHead = 0
        heap.removeAll()
    }

    private mutating func pushHeap(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popHeap() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
