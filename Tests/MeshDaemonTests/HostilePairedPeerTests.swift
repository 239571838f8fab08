import Foundation
import Logging
import MeshCrypto
import MeshLocalAPI
import NIOCore
import SessionMesh
import Testing
@testable import MeshDaemon

/// A paired device that turned hostile: it holds the pair key, so everything it sends
/// authenticates. Three real in-process daemons: the victim (node + router + store), the
/// hostile peer (a bare node whose channel seals whatever the test hands it) and an honest peer
/// (node + router) whose reliable items must keep reaching the victim's app throughout.
extension DeliveryIntegration {
    @Suite("Hostile paired peer") struct HostilePairedPeerTests {
        static let feature = "demo"

        /// The victim with a router logging into `log`, and its app.
        struct Victim {
            let running: RunningNode
            let router: DeliveryRouter
            let store: DeliveryStore
            let task: Task<Void, any Error>
            let app: AppObserver

            var node: MeshNode { running.node }

            func stop() async {
                task.cancel()
                _ = await task.result
                await running.stop()
                store.close()
            }
        }

        static func startVictim(_ bed: DeliveryTestBed, log: CountingLogHandler,
                                options: DeliveryRouterOptions = DeliveryTestBed.options(),
                                storeOptions: DeliveryStoreOptions = DeliveryStoreOptions()) async throws -> Victim {
            let folder = bed.nodes.temporaryFolder()
            let running = try await bed.nodes.start(bed.nodes.configuration(name: "victim", stateDirectory: folder))
            var storeOptions = storeOptions
            storeOptions.synchronous = .normal
            let store = try DeliveryRouter.openStore(stateDirectory: folder, options: storeOptions)
            let router = DeliveryRouter(node: running.node, store: store, options: options,
                                        logger: log.logger("victim.delivery"))
            let task = Task { try await router.run() }
            let app = AppObserver(features: [feature])
            _ = await router.attach(features: [feature], sink: app)
            return Victim(running: running, router: router, store: store, task: task, app: app)
        }

        /// Runs `body` with a victim (its router logging into `log`) and a bare hostile node
        /// paired with it, their channel active; stops both whatever `body` does.
        static func withHostilePeer(log: CountingLogHandler, storeOptions: DeliveryStoreOptions = DeliveryStoreOptions(),
                                    _ body: (Victim, RunningNode) async throws -> Void) async throws {
            let bed = DeliveryTestBed()
            let victim = try await startVictim(bed, log: log, storeOptions: storeOptions)
            do {
                let hostile = try await bed.nodes.start(name: "hostile")
                _ = try await bed.nodes.pair(victim.running, hostile)
                try await waitUntil("channel active", timeout: 15) { await victim.node.isActive(hostile.node.deviceID) }
                try await body(victim, hostile)
            } catch {
                await victim.stop()
                await bed.shutdown()
                throw error
            }
            await victim.stop()
            await bed.shutdown()
        }

        /// Sends `messages` from the hostile node until all went out (reconnecting after the
        /// channel closed); returns how many were sent.
        static func send(_ messages: [(ChannelMessage, PingPath)], from hostile: MeshNode, to victim: DeviceID) async throws -> Int {
            let (sent, lastWrite) = await hostile.sendSealed(messages, to: victim)
            if let lastWrite { try? await lastWrite.get() }
            if sent < messages.count {
                try await waitUntil("hostile channel active again", timeout: 15) { await hostile.isActive(victim) }
            }
            return sent
        }

        static func counters(_ victim: Victim) async -> [String: UInt64] {
            var values = await victim.router.counterValues()
            for (key, value) in await victim.node.status().counters { values[key] = value }
            return values
        }

        /// ≥ 100 000 sealed messages with random and boundary values on both paths, rare rekey
        /// garbage, then reliable batches as fast as TCP takes them; meanwhile the honest peer
        /// sends reliable items. The victim stays up, its memory stays bounded, the honest items
        /// all reach its app once, and its app never sees another feature, a second copy of an
        /// event ID or a negative duration.
        @Test func hostilePeerCannotCrashStallOrFloodTheVictim() async throws {
            let seed = hostileTestSeed("hostilePeerCannotCrashStallOrFloodTheVictim")
            let messageCount = Int(ProcessInfo.processInfo.environment["MESH_HOSTILE_MESSAGES"] ?? "") ?? 100_000
            let bed = DeliveryTestBed()
            let log = CountingLogHandler()
            // A small inbox pipeline, so the flood below reaches its bound.
            var options = DeliveryTestBed.options()
            options.inboxBacklogBytes = 256 << 10
            let victim = try await Self.startVictim(bed, log: log, options: options)
            do {
                let hostile = try await bed.nodes.start(name: "hostile")
                let honest = try await bed.start(name: "honest")
                _ = try await bed.nodes.pair(victim.running, hostile)
                _ = try await bed.nodes.pair(victim.running, honest.running)
                let victimID = victim.node.deviceID, hostileID = hostile.node.deviceID
                try await waitUntil("channels active", timeout: 15) {
                    let peers = await victim.node.activePeers()
                    return peers.contains(hostileID) && peers.contains(honest.deviceID)
                }
                try await waitUntil("the honest peer sees the victim's app", timeout: 10) {
                    await honest.node.isActive(victimID)
                }
                let baseline = residentBytes()
                var peakResident = baseline
                let started = ContinuousClock.now

                // The honest peer's reliable items, sent while the flood runs: one after each of
                // the hostile peer's bursts (`floodProgress.sent` counts them).
                let honestCount = 200
                let floodProgress = SenderProgress()
                let honestSender = Task {
                    var sent: [UUID] = []
                    for index in 0..<honestCount {
                        let (envelope, encoded) = try RouterFixtures.envelope("honest \(index)", sequence: UInt64(index + 1),
                                                                              feature: Self.feature)
                        _ = try await honest.router.send(envelope, encoded: encoded, mode: 2, to: victimID.description)
                        sent.append(envelope.metadata.eventID)
                        _ = await floodProgress.changed.until(10) { floodProgress.state.sent > index || floodProgress.state.finished }
                    }
                    return sent
                }

                // Phase 1: random and boundary messages.
                var factory = HostileMessageFactory(seed: seed, attachedFeature: Self.feature)
                var sent = 0, rekeys = 0
                while sent < messageCount {
                    var burst: [(ChannelMessage, PingPath)] = []
                    for _ in 0..<256 { burst.append(factory.channelMessage()) }
                    // Now and then a reply to one of the victim's real requests, lying by 200 years.
                    for t1 in await victim.node.outstandingKeepalives(to: hostileID).prefix(2) {
                        let lie = t1 &+ 200 * 365 * 86_400 * 1_000_000_000
                        burst.append((.keepaliveReply(t1: t1, t2: lie, t3: lie), .datagram))
                    }
                    if rekeys < 3, sent > messageCount / 4 * (rekeys + 1) {
                        rekeys += 1
                        burst.append((factory.rekeyMessage(), .stream))
                    }
                    sent += try await Self.send(burst, from: hostile.node, to: victimID)
                    floodProgress.update { $0.sent += 1 }
                    if sent % 4096 < 260 { peakResident = max(peakResident, residentBytes()) }
                }
                let phase1 = ContinuousClock.now - started

                // Phase 2: reliable batches of valid items, as fast as TCP takes them (2 s).
                let floodStart = ContinuousClock.now
                var floodBatches = 0, sequence: UInt64 = 1
                while ContinuousClock.now - floodStart < .seconds(2) {
                    var writer = WireWriter(capacity: 300 * 1024)
                    writer.u8(0x03)
                    writer.u32(64)
                    for _ in 0..<64 {
                        let (metadata, encoded) = factory.envelope(feature: factory.otherFeature)
                        let padded = encoded   // ~120 bytes; many of them make the batch
                        writer.u64(sequence)
                        sequence += 1
                        DeliveryItem(eventID: metadata.eventID, kind: 2, featureID: metadata.featureID,
                                     sessionID: metadata.sessionID, payload: padded).encode(into: &writer)
                    }
                    sent += try await Self.send(Array(repeating: (.application(writer.bytes), .stream), count: 16),
                                                from: hostile.node, to: victimID)
                    floodBatches += 16
                    peakResident = max(peakResident, residentBytes())
                }

                // The honest peer's items all arrive, once each, while the victim stays up.
                floodProgress.update { $0.finished = true }
                let honestIDs = try await honestSender.value
                try await waitUntil("the honest items reached the victim's app", timeout: 30) {
                    victim.app.eventIDs(from: honest.id).isSuperset(of: honestIDs)
                }
                let elapsed = ContinuousClock.now - started
                let values = await Self.counters(victim)
                let backlogPeak = await victim.router.backlogPeakBytes()
                let estimate = await victim.node.linkEstimate(of: hostileID)
                let seen = victim.app.snapshot
                print("""
                    hostile paired peer: seed \(seed), \(sent) messages (\(floodBatches) flood batches, \(rekeys) rekey \
                    messages) in \(elapsed) (phase 1 \(phase1)); resident \(baseline >> 20) → peak \(peakResident >> 20) MiB; \
                    inbox backlog peak \(backlogPeak >> 10) KiB; warnings \(log.total); \
                    refused: acks \(values["delivery.reliable.acks_refused"] ?? 0), items \(values["delivery.items_refused"] ?? 0), \
                    keepalive replies \(values["keepalives.replies_refused"] ?? 0), anchors \(values["delivery.anchors.refused"] ?? 0); \
                    malformed \(values["delivery.malformed"] ?? 0); app: \(seen.anchors) anchors
                    """)
                #expect(sent >= messageCount)
                #expect(await victim.node.activePeers().contains(honest.deviceID))
                #expect(victim.app.eventIDs(from: honest.id).count == honestCount)
                #expect(seen.otherFeatures == 0)
                #expect(seen.undecodable == 0)
                #expect(seen.negative == 0)
                #expect(victim.app.eventIDsHandedTwice == 0)
                #expect((values["delivery.reliable.acks_refused"] ?? 0) > 0)
                #expect((values["delivery.items_refused"] ?? 0) > 0)
                #expect((values["keepalives.replies_refused"] ?? 0) > 0)
                #expect((values["delivery.malformed"] ?? 0) > 0)
                if let offset = estimate.offsetNanoseconds {
                    #expect(offset.magnitude <= UInt64(ClockOffsetEstimator.maximumOffsetNanoseconds))
                }
                // The pipeline holds at most its limit plus one message; the process (three
                // daemons and the test) grows by far less than the flood sent.
                #expect(backlogPeak <= options.inboxBacklogBytes + (64 << 10))
                #expect(peakResident - baseline < 160 << 20)
                // Warnings are summarised, not one per message.
                #expect(log.total < 200)
            } catch {
                await victim.stop()
                await bed.shutdown()
                throw error
            }
            await victim.stop()
            await bed.shutdown()
        }

        /// An ack for more than was sent (2^63) is refused and counted; the stream to that peer
        /// goes on, and a true ack still deletes the items.
        @Test func ackBeyondWhatWasSentIsRefused() async throws {
            let log = CountingLogHandler()
            try await Self.withHostilePeer(log: log) { victim, hostile in
                let victimID = victim.node.deviceID, hostileID = hostile.node.deviceID
                // What the victim sends the hostile node arrives in its inbound stream (no router there).
                let highest = Task {
                    var highest: UInt64 = 0
                    for await message in await hostile.node.recordInbound().messages {
                        if case .reliableBatch(let items)? = try? DeliveryMessage(decoding: message.bytes),
                           let last = items.map(\.sequence).max() {
                            highest = max(highest, last)
                            if highest >= 5 { return highest }
                        }
                    }
                    return highest
                }
                for index in 0..<5 {
                    let (envelope, encoded) = try RouterFixtures.envelope("to hostile \(index)", sequence: UInt64(index + 1))
                    _ = try await victim.router.send(envelope, encoded: encoded, mode: 2, to: hostileID.description)
                }
                let sentUpTo = await highest.value
                #expect(sentUpTo == 5)
                for upTo in [UInt64(1) << 63, UInt64.max, sentUpTo + 1] {
                    _ = try await Self.send([(.application(DeliveryMessage.reliableAck(upTo: upTo).encode()), .stream)],
                                            from: hostile.node, to: victimID)
                }
                try await waitUntil("acks refused", timeout: 5) {
                    (await victim.router.counterValues()["delivery.reliable.acks_refused"] ?? 0) == 3
                }
                #expect(try await victim.router.queue().count == 5)
                // The true ack still works: the stream was not stopped.
                _ = try await Self.send([(.application(DeliveryMessage.reliableAck(upTo: sentUpTo).encode()), .stream)],
                                        from: hostile.node, to: victimID)
                try await waitUntil("outbox drained by the true ack", timeout: 5) { try await victim.router.queue().isEmpty }
                #expect(log.lines["refused a reliable ack for items never sent to the peer"] == 1)
            }
        }

        /// Items whose header disagrees with their envelope are refused; one envelope in two
        /// items reaches the app once.
        @Test func itemsMustMatchTheirEnvelope() async throws {
            let log = CountingLogHandler()
            try await Self.withHostilePeer(log: log) { victim, hostile in
                let victimID = victim.node.deviceID, hostileID = hostile.node.deviceID
                let (other, otherEncoded) = try RouterFixtures.envelope("other feature", sequence: 1, feature: "other")
                let (twice, twiceEncoded) = try RouterFixtures.envelope("one envelope, two items", sequence: 2)
                let disguised = DeliveryItem(eventID: other.metadata.eventID, kind: 2, featureID: Self.feature,
                                             sessionID: other.metadata.sessionID, payload: otherEncoded)
                let first = DeliveryItem(eventID: twice.metadata.eventID, kind: 2, featureID: Self.feature,
                                         sessionID: twice.metadata.sessionID, payload: twiceEncoded)
                var second = first
                second.eventID = UUID()
                var oddKind = first
                oddKind.kind = 0x77
                let messages: [DeliveryMessage] = [
                    .realtime(disguised), .reliableBatch([(UInt64(1), disguised)]),
                    .reliableBatch([(UInt64(2), first), (UInt64(3), second)]), .realtime(second), .realtimeBatch([first, first]),
                    .realtime(oddKind),
                ]
                for message in messages {
                    let path: PingPath = if case .reliableBatch = message { .stream } else { .datagram }
                    _ = try await Self.send([(.application(message.encode()), path)], from: hostile.node, to: victimID)
                }
                try await waitUntil("the valid copy reached the app", timeout: 5) {
                    victim.app.eventIDs(from: hostileID.description).contains(twice.metadata.eventID)
                }
                try await waitUntil("the rest refused", timeout: 5) {
                    let values = await victim.router.counterValues()
                    return values["delivery.items_refused"] == 5 && values["delivery.malformed", default: 0] == 0
                }
                #expect(victim.app.snapshot.otherFeatures == 0)
                #expect(victim.app.eventIDs(from: hostileID.description) == [twice.metadata.eventID])
                #expect(victim.app.eventIDsHandedTwice == 0)
            }
        }

        /// Datagrams into a full inbox: the sender keeps what was refused, and the victim writes
        /// a few summarised warnings, not one per item.
        @Test func fullInboxWarningsAreRateLimited() async throws {
            let log = CountingLogHandler()
            var storeOptions = DeliveryStoreOptions()
            storeOptions.maxInboxItems = 20
            try await Self.withHostilePeer(log: log, storeOptions: storeOptions) { victim, hostile in
                let victimID = victim.node.deviceID, hostileID = hostile.node.deviceID
                var factory = HostileMessageFactory(seed: 7, attachedFeature: Self.feature)
                var sent = 0
                for _ in 0..<40 {
                    var burst: [(ChannelMessage, PingPath)] = []
                    for _ in 0..<128 {
                        let (metadata, encoded) = factory.envelope(feature: factory.otherFeature)
                        let item = DeliveryItem(eventID: metadata.eventID, kind: 1, featureID: metadata.featureID,
                                                sessionID: metadata.sessionID, payload: encoded)
                        burst.append((.application(DeliveryMessage.realtime(item).encode()), .datagram))
                    }
                    sent += try await Self.send(burst, from: hostile.node, to: victimID)
                    try await Task.sleep(for: .milliseconds(5))
                }
                try await waitUntil("items refused", timeout: 10) {
                    (await victim.router.counterValues()["delivery.inbox.refused"] ?? 0) > 100
                }
                let refused = await victim.router.counterValues()["delivery.inbox.refused"] ?? 0
                print("full inbox: \(sent) datagrams sent, \(refused) items refused, \(log.total) warning lines: \(log.lines)")
                #expect(log.total <= 4)
            }
        }
    }
}
