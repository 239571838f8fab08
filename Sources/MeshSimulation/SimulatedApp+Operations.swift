import Foundation
import MeshDaemon
import SessionMesh

/// What a simulated app does: each operation runs as a task on its daemon's loop (one at a
/// time per app) and records its outcome in the ledger when it returns.
extension SimulatedApp {
    var others: [Int] { (0..<context.deviceKeys.count).filter { $0 != daemon } }

    func attach(on host: SimulatedDaemon) {
        guard attachment == nil, !busy, host.alive else { return }
        busy = true
        generation = context.nextAttachment()
        let sink = makeSink(store: host.store), feature = self.feature
        context.note("\(name) attaches (#\(generation))")
        host.spawn { router in
            let result = await router.attach(features: [feature], sink: sink)
            self.attachment = result.attachmentID
            self.busy = false
        }
    }

    func detach(on host: SimulatedDaemon) {
        guard let id = attachment, !busy else { return }
        busy = true
        attachment = nil
        context.note("\(name) detaches")
        host.spawn { router in
            await router.detach(id)
            self.busy = false
        }
    }

    /// Sends the oldest unconfirmed engine envelope reliably to every peer.
    func sendNextReliable(on host: SimulatedDaemon) {
        guard !busy, host.alive, let envelope = unsent.first, let encoded = try? SessionWireCodec.encode(envelope) else { return }
        busy = true
        let eventID = envelope.metadata.eventID
        sendingEventID = eventID
        if context.ledger.recordSend(eventID, sender: daemon, targets: others, mode: 2, feature: feature, at: context.clock.nanoseconds) {
            context.itemsSent += 1
        }
        context.note("\(name) sends \(eventID.uuidString.prefix(8)) reliable #\(context.ledger.send(eventID)?.index ?? -1) to all")
        host.spawn { router in
            do {
                _ = try await router.send(envelope, encoded: encoded, mode: 2, to: nil)
                self.context.ledger.confirmSend(eventID)
                if self.unsent.first?.metadata.eventID == eventID { self.unsent.removeFirst() }
            } catch {
                self.context.ledger.markAmbiguous(eventID)
                self.context.note("\(self.name) reliable send failed: \(error)")
            }
            self.sendingEventID = nil
            self.busy = false
        }
    }

    func sendRealtime(to target: Int?, on host: SimulatedDaemon) {
        guard !busy, host.alive else { return }
        let envelope = realtimeEnvelope()
        guard let encoded = try? SessionWireCodec.encode(envelope) else { return }
        busy = true
        let eventID = envelope.metadata.eventID
        context.ledger.recordSend(eventID, sender: daemon, targets: target.map { [$0] } ?? others, mode: 1, feature: feature,
                                  at: context.clock.nanoseconds)
        context.itemsSent += 1
        let key = target.map { context.deviceKeys[$0] }
        context.note("\(name) sends \(eventID.uuidString.prefix(8)) realtime to \(target.map { "d\($0)" } ?? "all")")
        host.spawn { router in
            let outcome = try? await router.send(envelope, encoded: encoded, mode: 1, to: key)
            self.context.note("\(self.name) realtime \(eventID.uuidString.prefix(8)): \(outcome?.outcome ?? "failed")")
            self.busy = false
        }
    }

    /// Acknowledges up to `count` of the inbox items received, oldest first.
    func acknowledge(count: Int, on host: SimulatedDaemon) {
        guard !busy, host.alive, !unacknowledged.isEmpty else { return }
        busy = true
        let chosen = Array(unacknowledged.prefix(count))
        context.note("\(name) acks inbox \(chosen.map(\.inboxID))")
        host.spawn { router in
            do {
                _ = try await router.acknowledgeInbox(ids: chosen.map(\.inboxID))
                self.context.ledger.recordAck(chosen.map(\.eventID), at: self.daemon)
                let done = Set(chosen.map(\.inboxID))
                self.unacknowledged.removeAll { done.contains($0.inboxID) }
            } catch {
                self.context.note("\(self.name) ack failed: \(error)")
            }
            self.busy = false
        }
    }

    func publishSnapshot(on host: SimulatedDaemon) {
        guard !busy, host.alive else { return }
        snapshotRevision += 1
        let revision = snapshotRevision
        let snapshot = AnySessionSyncSnapshot(metadata: snapshotMetadata(), revision: revision, state: Data("\(engine.state)".utf8))
        guard let encoded = try? SessionWireCodec.encode(snapshot) else { return }
        busy = true
        context.ledger.recordPublishAttempt(daemon, feature: feature, revision: revision)
        context.note("\(name) publishes snapshot revision \(revision)")
        host.spawn { router in
            do {
                if try await router.publishSnapshot(snapshot, encoded: encoded, to: nil) {
                    self.context.ledger.recordPublishConfirmed(self.daemon, feature: self.feature, revision: revision)
                } else {
                    self.context.fail([SimulationViolation(.snapshotRevision,
                        "\(self.name)'s slot refused revision \(revision), higher than any it published")])
                }
            } catch {
                self.context.note("\(self.name) publish failed: \(error)")
            }
            self.busy = false
        }
    }

    func snapshotMetadata(session: UUID? = nil) -> SessionSyncMetadata {
        SessionSyncMetadata(sessionID: session ?? self.session, featureID: feature, sourcePeerID: "app-\(daemon)-\(feature)",
                            eventID: realtimeIDs.next(), sequence: 0, causalTimestamp: Date(timeIntervalSince1970: 1_700_000_000),
                            payloadType: "sim.sum")
    }

    /// Reads the latest snapshot `publisher` published for this feature and checks its revision.
    func readSnapshot(from publisher: Int, healed: Bool, on host: SimulatedDaemon) {
        // A removed device and the members forget each other's snapshots: nothing to check.
        guard !busy, host.alive, publisher != daemon, context.removedDaemon != daemon, context.removedDaemon != publisher else { return }
        busy = true
        let key = context.deviceKeys[publisher]
        host.spawn { router in
            do {
                let latest = try await router.latestSnapshot(featureID: self.feature, peer: key, sessionID: self.session)
                let revision = try latest.map { try SessionWireCodec.decodeSnapshot($0.encoded).revision }
                let previous = self.context.ledger.lastRead[SimulationLedger.readKey(self.daemon, publisher, self.feature)] ?? 0
                self.context.note("\(self.name) reads d\(publisher)'s snapshot: revision \(revision.map(String.init) ?? "none")")
                self.context.fail(self.context.checker.checkSnapshotRead(
                    reader: self.daemon, publisher: publisher, feature: self.feature, revision: revision, previous: previous,
                    healed: healed, ledger: self.context.ledger))
                _ = self.context.ledger.recordRead(self.daemon, publisher: publisher, feature: self.feature, revision: revision ?? 0)
            } catch {
                self.context.note("\(self.name) snapshot read failed: \(error)")
            }
            self.busy = false
        }
    }

    func requestSnapshot(from publisher: Int, on host: SimulatedDaemon) {
        guard !busy, host.alive, publisher != daemon else { return }
        busy = true
        let key = context.deviceKeys[publisher]
        context.note("\(name) asks d\(publisher) for a snapshot")
        host.spawn { router in
            try? await router.requestSnapshot(sessionID: self.session, featureID: self.feature, peer: key)
            self.busy = false
        }
    }

    /// Announces `session` open; refused (an error) exactly when this daemon has shown it closed.
    func announce(_ session: UUID, on host: SimulatedDaemon) {
        guard !busy, host.alive else { return }
        busy = true
        // A daemon removed from the set forgets the others' sessions, closed ones too.
        let closedBefore = context.checker.hasSeenClosed(session, at: daemon) && context.removedDaemon != daemon
        context.note("\(name) announces session \(session.uuidString.prefix(8))")
        host.spawn { router in
            do {
                try await router.announceSession(sessionID: session, featureID: self.feature, owner: self.name, status: "open")
                if closedBefore {
                    self.context.fail([SimulationViolation(.sessionRevived,
                        "d\(self.daemon) took an announce of session \(session.uuidString.prefix(8)) after showing it closed")])
                }
            } catch {
                self.context.note("\(self.name) announce refused: \(error)")
            }
            self.busy = false
        }
    }

    func close(_ session: UUID, on host: SimulatedDaemon) {
        guard !busy, host.alive else { return }
        busy = true
        context.note("\(name) closes session \(session.uuidString.prefix(8))")
        host.spawn { router in
            do {
                _ = try await router.closeSession(sessionID: session, featureID: self.feature)
                self.context.ledger.recordClosed(session)
                self.context.checker.noteClosed(session, at: self.daemon)
                self.context.note("\(self.name) closed session \(session.uuidString.prefix(8))")
            } catch {
                self.context.note("\(self.name) close failed: \(error)")
            }
            self.busy = false
        }
    }

    /// Publishes a snapshot of a session this daemon has shown closed: must be refused.
    func publishOnClosed(_ session: UUID, on host: SimulatedDaemon) {
        guard !busy, host.alive, context.checker.hasSeenClosed(session, at: daemon), context.removedDaemon != daemon else { return }
        let snapshot = AnySessionSyncSnapshot(metadata: snapshotMetadata(session: session), revision: 1_000_000, state: Data())
        guard let encoded = try? SessionWireCodec.encode(snapshot) else { return }
        busy = true
        context.note("\(name) publishes into closed session \(session.uuidString.prefix(8))")
        host.spawn { router in
            if (try? await router.publishSnapshot(snapshot, encoded: encoded, to: nil)) != nil {
                self.context.fail([SimulationViolation(.sessionRevived,
                    "d\(self.daemon) took a snapshot of session \(session.uuidString.prefix(8)) after showing it closed")])
            }
            self.busy = false
        }
    }

    func readSessions(on host: SimulatedDaemon) {
        guard !busy, host.alive else { return }
        busy = true
        host.spawn { router in
            if let records = try? await router.sessions(featureID: self.feature) {
                for record in records {
                    if self.context.removedDaemon != self.daemon {
                        self.context.fail(self.context.checker.checkSession(record.sessionID, status: record.status, at: self.daemon))
                    }
                }
            }
            self.busy = false
        }
    }

    /// Sets the engine session's timer anchor at `revision`, started now on this daemon's clock.
    func setAnchor(revision: UInt64, on host: SimulatedDaemon) {
        guard !busy, host.alive else { return }
        busy = true
        let start = Double(host.clock.wallNanoseconds()) / 1e9
        let anchor = SessionTimerAnchor.started(at: Date(timeIntervalSince1970: start))
        context.anchorsSet["\(session)/\(revision)"] = (daemon, start)
        context.note("\(name) sets anchor revision \(revision)")
        host.spawn { router in
            _ = try? await router.setAnchor(sessionID: self.session, featureID: self.feature, revision: revision, anchor: anchor)
            self.busy = false
        }
    }
}
