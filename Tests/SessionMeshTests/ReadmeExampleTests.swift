// The protocol core on its own: two engines of a timer feature over the deterministic in-memory
// network (seeded, virtual clock), as tests of features drive them. The README's example runs
// the same engine against real daemons (MeshDaemonTests/ReadmeDaemonExampleTests).
import Foundation
import SessionMesh
import Testing

// 1. The feature: state, event, reducer, conflict policy.
struct TimerState: Codable, Sendable, Equatable {
    var anchor: SessionTimerAnchor?
    var finished = false
}

enum TimerEvent: Codable, Sendable {
    case start(at: Date), pause(at: Date), resume(at: Date), finish
}

struct TimerReducer: SessionSyncReducer {
    func reduce(state: inout TimerState, event: TimerEvent, context: SessionEventContext) throws {
        if state.finished { return }                       // terminal state is sticky
        switch event {
        case .start(let at):  state.anchor = .started(at: at)
        case .pause(let at):  state.anchor = state.anchor?.paused(at: at)
        case .resume(let at): state.anchor = state.anchor?.resumed(at: at)
        case .finish:         state.finished = true
        }
    }
}

struct TimerPolicy: SessionConflictPolicy {
    func shouldApply(event: TimerEvent, context: SessionConflictContext<TimerState>) -> Bool {
        !context.state.finished                            // mirror the reducer's guard
    }
}

typealias TimerEngine = SessionSyncEngine<TimerState, TimerEvent, TimerReducer, TimerPolicy>

// 2. Two devices over a deterministic in-memory network.
func readmeExample() async throws -> (TimerEngine, TimerEngine, Date) {
    let session = UUID()
    let network = ScenarioNetwork(seed: 42)
    let phonePeer = SessionPeer(id: "phone", deviceClass: .phone, appInstanceID: "p1",
                                userID: nil, topology: .pairedCompanion)
    let watchPeer = SessionPeer(id: "watch", deviceClass: .watch, appInstanceID: "w1",
                                userID: nil, topology: .pairedCompanion)
    let phoneLink = network.makeTransport(localPeer: phonePeer)
    let watchLink = network.makeTransport(localPeer: watchPeer)
    var phone = TimerEngine(sessionID: session, featureID: "timer", localPeer: phonePeer,
                            initialState: TimerState(), reducer: TimerReducer(), conflictPolicy: TimerPolicy())
    var watch = TimerEngine(sessionID: session, featureID: "timer", localPeer: watchPeer,
                            initialState: TimerState(), reducer: TimerReducer(), conflictPolicy: TimerPolicy())
    var watchInbox = watchLink.receiveEnvelopes().makeAsyncIterator()

    // The user taps Start, then Pause, on the phone.
    let t0 = network.now
    for event in [TimerEvent.start(at: t0), .pause(at: t0.addingTimeInterval(90))] {
        let envelope = try phone.submitLocal(event, at: network.now)
        try await phoneLink.send(AnySessionSyncEnvelope(envelope), mode: .realtimeBestEffort, to: nil)
    }
    network.runUntilIdle()                                 // virtual time: nothing sleeps

    // The watch applies what arrives; a gap would ask for a snapshot instead.
    for _ in 0..<2 {
        guard let erased = await watchInbox.next() else { break }
        switch try watch.receive(erased.typed(as: TimerEvent.self)) {
        case .applied, .duplicate, .ignored: break
        case .snapshotRequired: try await watchLink.requestSnapshot(sessionID: session, from: phonePeer)
        }
    }
    return (phone, watch, t0)   // both show 1:30 elapsed, paused
}

@Suite("Engine example on the in-memory network")
struct ReadmeExampleTests {
    @Test func twoEnginesAgreeOverTheScenarioNetwork() async throws {
        let (phone, watch, t0) = try await readmeExample()
        #expect(phone.state == watch.state)
        #expect(watch.state.anchor?.isPaused == true)
        #expect(watch.state.anchor?.elapsed(at: t0.addingTimeInterval(3600)) == 90)
    }
}
