import NIOCore

/// An actor whose executor is one NIO event loop (`MeshNode`, `DeliveryRouter`): code running
/// on that loop's thread is isolated to it.
///
/// `onLoop` is `Actor.assumeIsolated` with the check done by the loop (`inEventLoop`, a thread
/// comparison) instead of the Swift runtime's executor lookup, which cost ≈ 400 instructions
/// per call — several per realtime message on the hot paths that hop between the node and its
/// router synchronously. The guarantee is the same: the loop runs its jobs one at a time, so
/// code on its thread cannot overlap any other access to the actor's state.
protocol LoopIsolatedActor: Actor {
    /// The loop that is this actor's executor.
    nonisolated var loop: any EventLoop { get }
}

extension LoopIsolatedActor {
    /// Runs `body` isolated to this actor; traps when not called on `loop` (a programming error,
    /// as for `assumeIsolated`).
    @inline(__always)
    nonisolated func onLoop<T>(_ body: (isolated Self) throws -> T) rethrows -> T {
        precondition(loop.inEventLoop, "must be called on the actor's event loop")
        typealias Isolated = (isolated Self) throws -> T
        typealias Plain = (Self) throws -> T
        return try withoutActuallyEscaping(body) { (escapable: @escaping Isolated) throws -> T in
            try unsafeBitCast(escapable, to: Plain.self)(self)
        }
    }
}

extension LoopIsolatedActor {
    /// Runs `body` on this actor: how a nonisolated task (a child task of `run()`, a dial or
    /// accept driver) enters the actor's components, one hop as any call to the actor.
    func hop<T>(_ body: @Sendable (isolated Self) async throws -> sending T) async rethrows -> sending T {
        try await body(self)
    }
}

extension MeshNode: LoopIsolatedActor {}
extension DeliveryRouter: LoopIsolatedActor {}
