import Foundation
import SessionMesh
import Testing

/// The seed's guidance: once a session is terminal, only late metrics apply. The reducer guards
/// at the top AND the conflict policy mirrors the rule.
enum WorkoutPhase: String, Codable, Sendable { case active, paused, completed, abandoned }

struct WorkoutState: Codable, Sendable, Equatable {
    var phase: WorkoutPhase = .active
    var heartbeats = 0
    var isTerminal: Bool { phase == .completed || phase == .abandoned }
}

enum WorkoutEvent: Codable, Sendable, Equatable {
    case pause(at: Date), resume(at: Date), complete(at: Date), abandon(at: Date)
    case heartbeatSample(at: Date)
    var isMetric: Bool { if case .heartbeatSample = self { true } else { false } }
}

struct WorkoutReducer: SessionSyncReducer {
    func reduce(state: inout WorkoutState, event: WorkoutEvent, context: SessionEventContext) throws {
        if state.isTerminal && !event.isMetric { return }
        switch event {
        case .pause: state.phase = .paused
        case .resume: state.phase = .active
        case .complete: state.phase = .completed
        case .abandon: state.phase = .abandoned
        case .heartbeatSample: state.heartbeats += 1
        }
    }
}

struct WorkoutConflictPolicy: SessionConflictPolicy {
    func shouldApply(event: WorkoutEvent, context: SessionConflictContext<WorkoutState>) -> Bool {
        !context.state.isTerminal || event.isMetric
    }
}

@Suite("Terminal states are sticky")
struct TerminalStickinessTests {
    typealias Engine = SessionSyncEngine<WorkoutState, WorkoutEvent, WorkoutReducer, WorkoutConflictPolicy>

    func engine(_ id: String) -> Engine {
        Engine(sessionID: Fixture.session, featureID: "workout", localPeer: Fixture.peer(id, .phone),
               initialState: WorkoutState(), reducer: WorkoutReducer(), conflictPolicy: WorkoutConflictPolicy())
    }

    @Test func afterCompletionOnlyLateMetricsApply() throws {
        var phone = engine("phone"), watch = engine("watch")
        let complete = try phone.submitLocal(.complete(at: Fixture.at(10)), at: Fixture.at(10))
        let lateResume = try watch.submitLocal(.resume(at: Fixture.at(9)), at: Fixture.at(9))
        let lateSample = try watch.submitLocal(.heartbeatSample(at: Fixture.at(9.5)), at: Fixture.at(9.5))
        #expect(try watch.receive(complete) == .applied(WorkoutState(phase: .completed, heartbeats: 1)))
        #expect(try phone.receive(lateResume) == .ignored(WorkoutState(phase: .completed, heartbeats: 0)))
        #expect(try phone.receive(lateSample) == .applied(WorkoutState(phase: .completed, heartbeats: 1)))
        #expect(phone.state == watch.state)
        #expect(phone.lastSequenceByPeerID["watch"] == 2)
    }

    @Test func aLocalTapAfterCompletionChangesNothing() throws {
        var phone = engine("phone")
        _ = try phone.submitLocal(.abandon(at: Fixture.at(1)), at: Fixture.at(1))
        _ = try phone.submitLocal(.resume(at: Fixture.at(2)), at: Fixture.at(2))
        #expect(phone.state.phase == .abandoned)
    }
}
