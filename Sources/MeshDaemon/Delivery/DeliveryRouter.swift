import Foundation
import Logging
import MeshCrypto
import MeshCore
import NIOCore
import ServiceLifecycle
import SessionMesh

/// Routes application data between local apps and paired devices: the four delivery modes of
/// docs/ARCHITECTURE.md §5, pre-activation buffering, presence, watermarks, sessions and timer anchors.
///
/// Wires the channels (`DeliveryChannels`: a `MeshNode` in a daemon), a `DeliveryStore` (outbox,
/// inbox, slots, directory, anchors) and the attached local clients (`DeliveryEventSink`). It is
/// the single inbound handler of its channels (messages and channel events), so create one
/// router per node and run it in the same `ServiceGroup`, after the node (shutdown runs in
/// reverse: the router stops first).
/// A router runs once. docs/DELIVERY.md describes the protocol and the guarantees.
public actor DeliveryRouter: Service {
    let channels: any DeliveryChannels
    let store: DeliveryStore
    let committer: StoreGroupCommitter
    let worker: StoreWorker
    let options: DeliveryRouterOptions
    let logger: Logger
    nonisolated let clock: any MeshClock
    /// This device's ID.
    public nonisolated let localDeviceID: DeviceID

    var counters = DeliveryCounters()
    var peerStates: [DeviceID: DeliveryPeerState] = [:]
    /// Full textual IDs (the store's peer keys), cached: formatting and parsing IDs is not free.
    var peerKeys: [DeviceID: String] = [:]
    var peersByKey: [String: DeviceID] = [:]
    /// The attached local clients, the sinks of each feature, the presence announced to peers.
    var attachments = AttachmentTable()
    /// The sending side: realtime and reliable sends, ack waits, the outbox pump (`DeliverySender`).
    let sender: DeliverySender
    /// Sessions, anchors, watermarks and snapshot slots shared with the peers (`SessionDirectory`).
    let directory: SessionDirectory
    var random: DeliveryRandom
    var ran = false
    /// The tasks `spawn` started and that have not ended (`run()` awaits them when it stops).
    var tasks = TrackedTasks()

    /// The periodic work: the tick loop and what a tick does (`DeliveryTicker`).
    let ticker: DeliveryTicker
    /// The receiving side (docs/DELIVERY.md): peer messages and channel events from arrival
    /// to the inbox.
    let consumer: InboundConsumer
    /// The hand-out of received items to the attached apps.
    let handOut: AppHandOut
    /// Store and forward through the relay broker's mailbox, when the channels have one.
    let courier = MailboxCourier()
    /// Warnings a peer or a full disk can cause over and over, each at most once per 10 s with
    /// a count of the ones held back.
    var peerFaultWarning = RateLimitedWarning()
    var storeErrorWarning = RateLimitedWarning()

    /// Creates a router over `node` and an open `store`. Nothing happens until `run()`.
    /// The router owns the store's group committer and shuts it down when it stops; the caller
    /// closes the store after `run()` returned.
    public init(node: MeshNode, store: DeliveryStore, options: DeliveryRouterOptions = DeliveryRouterOptions(),
                logger: Logger) {
        self.init(channels: NodeDeliveryChannels(node), store: store, options: options, logger: logger)
    }

    /// A router over any channel layer (the deterministic simulator's). It runs on
    /// `channels.routerExecutor`; its timers and loop work go to `channels.loop`.
    package init(channels: any DeliveryChannels, store: DeliveryStore, options: DeliveryRouterOptions = DeliveryRouterOptions(),
                 logger: Logger) {
        self.channels = channels
        self.store = store
        self.committer = options.storeInline ? StoreGroupCommitter(store: store, inlineOn: channels.loop)
            : StoreGroupCommitter(store: store)
        self.worker = StoreWorker(inline: options.storeInline)
        self.random = DeliveryRandom(seed: options.randomSeed)
        self.sender = DeliverySender(options: options, outboxRows: OutboxRows(store: store, worker: worker, committer: committer))
        self.directory = SessionDirectory(snapshotSlots: SnapshotSlots(store: store, worker: worker))
        self.options = options
        self.ticker = DeliveryTicker(presenceLease: options.presenceLease)
        self.consumer = InboundConsumer(options: options)
        self.handOut = AppHandOut(options: options)
        self.logger = logger
        self.clock = channels.clock
        self.localDeviceID = channels.deviceID
    }

    /// Opens (or creates) `<stateDirectory>/delivery.sqlite` with `storeOptions`.
    public static func openStore(stateDirectory: String,
                                 options: DeliveryStoreOptions = DeliveryStoreOptions()) throws -> DeliveryStore {
        try DeliveryStore.open(path: StateDirectory.path(stateDirectory, "delivery.sqlite"), options: options)
    }

    /// Consumes the node's messages and channel events, retries, renews presence and expires
    /// leases until graceful shutdown or cancellation. Then flushes what it must and returns.
    public func run() async throws {
        guard !ran else { throw MeshError(.alreadyRan, "this delivery router already ran") }
        ran = true
        await directory.pairedPeersReady(self)
        let (stop, stopper) = AsyncStream.makeStream(of: Void.self)
        // From here on the channels hand every message and channel event to `receive` /
        // `channelEvent` (what arrived before first, in order).
        channels.setInbound(self)
        channels.mailbox?.setInbound(self)
        // Child tasks prefer the loop: nonisolated steps inside them (an AsyncStream's `next`)
        // then run on the router's thread instead of hopping to the shared pool and back.
        await withTaskExecutorPreference(taskExecutor) { await self.serve(stop: stop, stopper: stopper) }
        channels.mailbox?.setInbound(nil)
        detachInbound()
        consumer.inboxSignalQueue.finish()
        await stopTasks()
        await consumer.flushSeen(self)
        let committer = self.committer
        _ = try? await worker.run { committer.shutdown() }
        logger.info("delivery router stopped")
    }

    private func serve(stop: AsyncStream<Void>, stopper: AsyncStream<Void>.Continuation) async {
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await self.hop { await $0.consumer.consumeChannelEvents($0) } }
                    group.addTask { await self.hop { await $0.consumer.consumeMessages($0) } }
                    group.addTask { await self.hop { await $0.consumer.consumeInboxWork($0) } }
                    group.addTask { await self.hop { await $0.ticker.run($0) } }
                    for await _ in stop {}
                    self.stopInboundWaits()
                    group.cancelAll()
                }
            } onGracefulShutdown: {
                stopper.finish()
            }
        } onCancel: {
            stopper.finish()
        }
    }

    /// The router runs on its node's event loop, like the node itself: a request, the router,
    /// the node and the socket write involve no thread switch. Store work never runs here
    /// (`StoreWorker`, `StoreGroupCommitter` have their own threads), so no fsync blocks the loop.
    /// (The simulator's channels give a hand-run executor instead.)
    public nonisolated var unownedExecutor: UnownedSerialExecutor { channels.routerExecutor }

    /// The event loop the router (and its node) runs on: its timers and loop work.
    nonisolated var loop: any EventLoop { channels.loop }

    /// Runs tasks on the router's thread (for work that starts outside the router but should stay there).
    nonisolated var taskExecutor: any TaskExecutor { channels.taskExecutor }

    func ensurePeer(_ peer: DeviceID) {
        if peerStates[peer] == nil {
            peerStates[peer] = DeliveryPeerState(pendingCapacity: options.pendingCapacity, retryInitial: options.retryInitial)
            peerStates[peer]?.awaySince = now()
            let key = peer.description
            peerKeys[peer] = key
            peersByKey[key] = peer
        }
    }

    /// The peer's full textual ID (store key, `from` of events).
    func key(_ peer: DeviceID) -> String { peerKeys[peer] ?? peer.description }

    /// Monotonic now, ns.
    func now() -> UInt64 { clock.monotonicNanoseconds() }

    /// Wall now as a `Date` (the node's clock, so a skewed test clock applies).
    func wallNow() -> Date { Date(timeIntervalSince1970: Double(clock.wallNanoseconds()) / 1e9) }

    /// Hands `message` to `peer`'s channel without waiting for the write: on the stream it
    /// queues on that peer's connection (bounded by the node's outbound budget), so one peer
    /// that does not read holds up no other peer and no app's request. False when the channel
    /// refused it (none active, or the peer's connection is full: the channel then closes and
    /// the peer gets the state at its next activation).
    @discardableResult
    func transmit(_ message: DeliveryMessage, to peer: DeviceID, path: PingPath, connection: UInt64? = nil) -> Bool {
        do {
            let bytes = message.encode()
            switch path {
            case .datagram: try channels.sendDatagram(bytes, to: peer, batched: false)
            case .stream: _ = try channels.sendStream(bytes, to: peer, connection: connection)
            }
            return true
        } catch {
            logger.trace("delivery send failed", metadata: ["peer.id": "\(peer.short)", "error": "\(error)"])
            return false
        }
    }

    /// Sends `message` on `peer`'s stream and returns once it was written (handed to the
    /// kernel); false when refused, failed or the router stops. Only the reliable pump waits
    /// so: one batch in NIO at a time per peer is its back-pressure. Nothing an app's request
    /// awaits may call it.
    func transmitWritten(_ message: DeliveryMessage, to peer: DeviceID, connection: UInt64?) async -> Bool {
        do {
            try await sendWritten(message.encode(), to: peer, connection: connection)
            return true
        } catch {
            logger.trace("delivery send failed", metadata: ["peer.id": "\(peer.short)", "error": "\(error)"])
            return false
        }
    }

    /// Writes encoded message bytes on the stream and returns once they were written (or the
    /// task was cancelled: the router stops). Throws `ChannelSendError`. (The write's future is
    /// awaited on this actor: no hop to another executor.)
    private func sendWritten(_ bytes: [UInt8], to peer: DeviceID, connection: UInt64?) async throws {
        let written = try channels.sendStream(bytes, to: peer, connection: connection)
        // A cancelled task stops waiting. The operation names `self`, so it runs on this
        // actor: a closure that does not capture it would hop to another executor.
        let wait = StreamWriteWait()
        let ok = await withTaskCancellationHandler {
            await withCheckedContinuation(isolation: self) { continuation in
                wait.set(continuation)
                written.whenComplete { wait.resume((try? $0.get()) != nil) }
            }
        } onCancel: {
            wait.resume(false)
        }
        guard ok else { throw ChannelSendError(code: .writeFailed) }
    }

    /// Emits `event` to every attachment of `featureID` (each sink once).
    func emit(_ event: DeliveryEvent, feature featureID: String) {
        for sink in attachments.sinks(for: featureID) { sink.emit(event) }
    }

    /// Emits `event` to every attachment (each sink once).
    func emitToAll(_ event: DeliveryEvent) {
        for sink in attachments.allSinks() { sink.emit(event) }
    }

    /// Emits reachability changes of `peer`: a feature's to its apps, the peer's to every app.
    func emitReachability(_ changes: [ReachabilityChange], of peer: DeviceID) {
        for change in changes {
            let event = DeliveryEvent.reachability(peer: peer.description, featureID: change.featureID,
                                                   reachable: change.reachable, reason: change.reason)
            if let feature = change.featureID { emit(event, feature: feature) } else { emitToAll(event) }
        }
    }

    /// Resolves a target: nil or empty means every paired device.
    func targets(_ text: String?) async throws -> [DeviceID] {
        guard let text, !Self.meansEveryPeer(text) else {
            return peerStates.keys.sorted()
        }
        if let exact = peersByKey[text] { return [exact] }
        let peer = try resolvePairedPeer(text)
        ensurePeer(peer)
        return [peer]
    }

    /// Resolves a full or short device ID (or unique prefix) among paired devices.
    func resolvePairedPeer(_ text: String) throws -> DeviceID {
        try channels.resolvePairedPeer(text)
    }

    /// Whether a send target names every paired device: nil, "all", or blank (only characters of
    /// Foundation's `CharacterSet.whitespaces`). ASCII text — every target a client normally
    /// sends, the empty one included — is checked without Foundation (its whitespace there is
    /// space and tab only).
    static func meansEveryPeer(_ target: String?) -> Bool {
        guard let target, !target.isEmpty, target != "all" else { return true }
        if target.utf8.allSatisfy({ $0 < 0x80 }) { return target.utf8.allSatisfy { $0 == 0x20 || $0 == 0x09 } }
        return target.trimmingCharacters(in: .whitespaces).isEmpty
    }

    /// Counters for `meshctl status`, including the pending-buffer and store levels.
    public func counterValues() async -> [String: UInt64] {
        let store = self.store
        // Through the worker: the store's lock may be held by a commit (an fsync). The store is
        // read first and the counters after it: a change the store shows (an outbox emptied by
        // acks) is then in the counters too, as its task counts it right after its commit.
        let levels = try? await worker.run({ (try store.counts(), store.spaceReserve()) })
        var values = counters.dictionary
        values.merge(courier.counterValues) { current, _ in current }
        values["pending.queued"] = UInt64(peerStates.values.reduce(0) { $0 + $1.pending.count })
        values["delivery.realtime.awaiting_ack"] = UInt64(sender.realtime.waits.count)
        values["delivery.attachments"] = UInt64(attachments.count)
        values["delivery.inbox.backlog_bytes"] = UInt64(consumer.inbox.bytes)
        values["delivery.inbox.backlog_peak_bytes"] = UInt64(consumer.inbox.peakBytes)
        if let (counts, reserve) = levels {
            values["delivery.outbox.items"] = UInt64(counts.outbox.items)
            values["delivery.outbox.bytes"] = UInt64(counts.outbox.bytes)
            values["delivery.inbox.items"] = UInt64(counts.inbox.items)
            values["delivery.inbox.bytes"] = UInt64(counts.inbox.bytes)
            values["store.space_reserve.held"] = reserve.held ? 1 : 0
            values["store.space_reserve.releases"] = UInt64(reserve.releases)
        }
        return values
    }
}

/// Something held for a sink while its inbox replay runs.
enum DeferredDelivery: Sendable {
    case entry(InboxEntry)
    case event(DeliveryEvent)
}

extension DeliveryRouter: CustomStringConvertible {
    /// `DeliveryRouter(DEVICE)`, for ServiceLifecycle's logs.
    public nonisolated var description: String { "DeliveryRouter(\(localDeviceID.short))" }
}
