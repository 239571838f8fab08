import Foundation
import Logging
import MeshCore
import MeshCrypto
import NIOCore
import NIOPosix
import Testing
@testable import MeshDaemon

/// A device's messages and its unpairing reach the router in one order but are worked through
/// by two consumers (messages, channel events). A message it sent just before it was unpaired
/// must not bring it back: no delivery state, no stored rows for a device that is gone.
@Suite("Delivery router: messages of an unpaired device")
struct DeliveryUnpairOrderTests {
    /// The order that lost the race before: the event consumer handles the unpairing first,
    /// then the message consumer works through what is queued. Driven step by step on the
    /// router's loop, so the interleaving is this one every time.
    @Test func aMessageQueuedBeforeTheUnpairingDoesNotRegisterTheDeviceAgain() async throws {
        let bed = try await Bed()
        defer { bed.directory.cleanUp() }
        let (channels, router, peer) = (bed.channels, bed.router, bed.channels.peer)
        #expect(await router.peerStates[peer] != nil)

        // Bob announced his app's features, then was unpaired: both arrive, in that order.
        let presence = InboundChannelMessage(peer: peer, path: .stream, bytes: DeliveryMessage.presence(features: ["demo"]).encode())
        let queued = try await channels.loop.submit { router.receive(presence) }.get()
        #expect(!queued, "a stream message is queued for the message consumer")
        try await channels.loop.submit { router.channelEvent(.unpaired(peer)) }.get()

        await Self.handleEventsThenMessages(router)
        #expect(await router.peerStates[peer] == nil, "the unpaired device's delivery state is not created again")

        // What it still sends (a read that was on its way) is not handled either.
        let late = InboundChannelMessage(peer: peer, path: .stream, bytes: DeliveryMessage.presence(features: ["x"]).encode())
        #expect(try await channels.loop.submit { router.receive(late) }.get(), "refused at once, not queued")
        await Self.handleEventsThenMessages(router)
        #expect(await router.peerStates[peer] == nil)

        // Paired again: its messages are handled as before.
        try await channels.loop.submit { router.channelEvent(.paired(peer)) }.get()
        _ = try await channels.loop.submit { router.receive(presence) }.get()
        await Self.handleEventsThenMessages(router)
        #expect(await router.peerStates[peer]?.presence.remoteFeatures == ["demo"])
        try await bed.close()
    }

    /// Items of a batch the device sent before it was unpaired, still in the inbox pipeline
    /// when the unpairing arrives, are not stored after its rows were dropped.
    @Test func itemsInThePipelineOfAnUnpairedDeviceAreNotStored() async throws {
        let bed = try await Bed()
        defer { bed.directory.cleanUp() }
        let (channels, store, router, peer) = (bed.channels, bed.store, bed.router, bed.channels.peer)
        let (envelope, encoded) = try RouterFixtures.envelope("before the unpairing", sequence: 1)
        let item = DeliveryItem(eventID: envelope.metadata.eventID, kind: 2, featureID: "demo",
                                sessionID: envelope.metadata.sessionID, payload: encoded)
        let batch = InboundChannelMessage(peer: peer, path: .stream,
                                          bytes: DeliveryMessage.reliableBatch([(sequence: 1, item: item)]).encode())
        _ = try await channels.loop.submit { router.receive(batch) }.get()
        // The message consumer takes the batch into the inbox pipeline; then the unpairing
        // arrives and is handled before the pipeline's transaction runs.
        await Self.handleMessages(router)
        try await channels.loop.submit { router.channelEvent(.unpaired(peer)) }.get()
        await Self.handleEventsThenMessages(router)
        await router.storeInboxBacklog()
        #expect(try store.counts().inbox.items == 0, "nothing stored for a device that is gone")
        try await bed.close()
    }

    /// A router over channels that never deliver, a store in a temporary folder, and one
    /// registered peer (`channels.peer`).
    struct Bed {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let directory: StoreTestDirectory
        let channels: DeliveryRouterStopTests.StuckChannels
        let store: DeliveryStore
        let router: DeliveryRouter

        init() async throws {
            directory = try StoreTestDirectory()
            channels = DeliveryRouterStopTests.StuckChannels(loop: group.next())
            store = try DeliveryStore.open(path: directory.path())
            router = DeliveryRouter(channels: channels, store: store, logger: Logger(label: "test.unpair-order"))
            await DeliveryUnpairOrderTests.register(channels.peer, on: router)
        }

        func close() async throws {
            store.close()
            try await group.shutdownGracefully()
        }
    }

    static func register(_ peer: DeviceID, on router: isolated DeliveryRouter) {
        router.ensurePeer(peer)
    }

    /// Handles every queued channel event, then every queued message, as the two consumers do.
    static func handleEventsThenMessages(_ router: isolated DeliveryRouter) async {
        while let event = router.consumer.inbound.nextEvent() {
            switch event {
            case .unpaired(let peer), .memberRemoved(let peer): await router.unpaired(peer)
            case .paired(let peer), .memberAdded(let peer): router.ensurePeer(peer)
            case .activated, .deactivated: break
            }
        }
        await handleMessages(router)
    }

    static func handleMessages(_ router: isolated DeliveryRouter) async {
        while let message = router.consumer.inbound.nextMessage() {
            await router.consumer.handle(router, message)
            router.consumer.inbound.messageDone()
        }
    }
}
