import CMosquitto
import Foundation
import MeshCore
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Waits in poll(2) for the one socket libmosquitto opened, on a thread of its own, and tells the
/// event loop when it is readable or writable. The thread never calls libmosquitto: every call
/// happens on the loop, in the handler.
///
/// NIO has no public way to watch a descriptor it did not open without reading from it, so this
/// is the least costly bridge (docs/ARCHITECTURE.md, "The relay's MQTT client"). One readiness
/// report is outstanding at a time: after reporting, the thread waits (on its eventfd alone) until
/// the loop has handled it and calls `watch` again, so a busy socket costs one wake-up per loop
/// turn and never a spin.
final class SocketReadinessWatcher: Sendable {
    /// What to wait for: the socket, and whether the client has bytes to write.
    struct Interest: Sendable, Equatable {
        var descriptor: Int32
        var write: Bool
    }

    /// What poll(2) reported.
    struct Readiness: Sendable {
        var readable: Bool
        var writable: Bool
    }

    private struct Shared {
        var interest: Interest?
        var generation: UInt64 = 0
        var reported = false
        var stopped = false
    }

    private let shared = Locked(Shared())
    private let wake: Int32
    private let exited = DispatchSemaphore(value: 0)

    /// Starts the thread; `report` runs on `loop` for each readiness.
    init(loop: any EventLoop, report: @escaping @Sendable (Readiness) -> Void) throws(MQTTFailure) {
        let descriptor = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard descriptor >= 0 else {
            throw MQTTFailure(.refused, "cannot create the relay's wake-up descriptor: \(String(cString: strerror(errno)))")
        }
        wake = descriptor
        let thread = Thread { [shared, exited] in
            Self.run(shared: shared, wake: descriptor, loop: loop, report: report)
            exited.signal()
        }
        thread.name = "meshd-mqtt-poll"
        thread.start()
    }

    /// Waits for `interest` from now on (nil: for nothing), re-arming after a report.
    func watch(_ interest: Interest?) {
        let changed = shared.withLock { state -> Bool in
            guard state.interest != interest || state.reported else { return false }
            state.interest = interest
            state.generation &+= 1
            state.reported = false
            return true
        }
        if changed { signal() }
    }

    /// Stops the thread and waits (at most a second) for it to exit.
    func stop() {
        let first = shared.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        signal()
        if exited.wait(timeout: .now() + 1) == .success {
            close(wake)
        }
        // A thread that did not exit keeps polling `wake`: leaving it open is safer than letting
        // another file reuse the number under it.
    }

    private func signal() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { write(wake, $0.baseAddress, 8) }
    }

    private static func run(shared: Locked<Shared>, wake: Int32, loop: any EventLoop,
                            report: @escaping @Sendable (Readiness) -> Void) {
        var descriptors = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0), pollfd()]
        while true {
            let (interest, generation, stopped) = shared.withLock { state in
                (state.reported ? nil : state.interest, state.generation, state.stopped)
            }
            if stopped { return }
            descriptors[0].revents = 0
            var count: nfds_t = 1
            if let interest {
                let events = Int16(POLLIN) | (interest.write ? Int16(POLLOUT) : 0)
                descriptors[1] = pollfd(fd: interest.descriptor, events: events, revents: 0)
                count = 2
            }
            let ready = poll(&descriptors, count, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                // Not expected (EFAULT, ENOMEM): hand the loop a readiness so it looks at the
                // socket itself, then wait to be re-armed rather than spin.
                descriptors[1].revents = Int16(POLLIN)
            }
            if descriptors[0].revents != 0 {
                var drained: UInt64 = 0
                _ = withUnsafeMutableBytes(of: &drained) { read(wake, $0.baseAddress, 8) }
            }
            guard count == 2, descriptors[1].revents != 0 else { continue }
            let revents = descriptors[1].revents
            let fire = shared.withLock { state -> Bool in
                guard state.generation == generation, !state.reported, !state.stopped else { return false }
                state.reported = true
                return true
            }
            if fire {
                let error = revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0
                let readiness = Readiness(readable: revents & Int16(POLLIN) != 0 || error,
                                          writable: revents & Int16(POLLOUT) != 0)
                loop.execute { report(readiness) }
            }
        }
    }
}
