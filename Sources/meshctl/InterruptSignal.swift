import Dispatch
import Foundation

/// Ctrl-C as an async sequence: while iterated, SIGINT no longer kills the process, so the
/// command can clean up (e.g. cancel a pairing code) before it exits.
enum InterruptSignal {
    /// A stream that yields once per SIGINT.
    static func stream() -> AsyncStream<Void> {
        signal(SIGINT, SIG_IGN)
        let box = SourceBox(DispatchSource.makeSignalSource(signal: SIGINT, queue: .global()))
        return AsyncStream { continuation in
            box.source.setEventHandler { continuation.yield() }
            continuation.onTermination = { _ in box.source.cancel() }
            box.source.resume()
        }
    }

    /// Dispatch sources are thread-safe; the box only carries one across the closure boundary.
    private final class SourceBox: @unchecked Sendable {
        let source: any DispatchSourceSignal
        init(_ source: any DispatchSourceSignal) { self.source = source }
    }
}
