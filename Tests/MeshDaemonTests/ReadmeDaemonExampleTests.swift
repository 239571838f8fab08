// The README's Swift example, run against two real meshd: between the BEGIN/END markers is
// exactly the code the README shows (ReadmeDaemonExampleTests checks that it still does).
import Foundation
import SessionMesh
import SessionMeshClient
import Testing

// BEGIN README SWIFT EXAMPLE
// The feature: a list of notes every device holds. Each device runs the same reducer.
struct Notes: Codable, Sendable, Equatable { var lines: [String] = [] }
struct Note: Codable, Sendable { var text: String }
struct NotesReducer: SessionSyncReducer {
    func reduce(state: inout Notes, event: Note, context: SessionEventContext) throws {
        state.lines.append(event.text)
    }
}
typealias NotesEngine = SessionSyncEngine<Notes, Note, NotesReducer, AcceptAllConflictPolicy<Notes, Note>>

/// One device's app: attach to the local meshd, send one note to every paired device
/// (reliably: it waits in the outbox while a device is off), apply notes until `expected`.
func runNotes(socketPath: String, me: SessionPeer, session: UUID, say text: String, expected: Int) async throws -> Notes {
    let transport = DaemonSessionSyncTransport(socketPath: socketPath, localPeer: me, features: ["notes"])
    try await transport.start()                  // connects and attaches; reconnects by itself
    var engine = NotesEngine(sessionID: session, featureID: "notes", localPeer: me, initialState: Notes(),
                             reducer: NotesReducer(), conflictPolicy: AcceptAllConflictPolicy())
    let inbox = transport.receiveEnvelopes()
    let envelope = try engine.submitLocal(Note(text: text), at: Date())
    try await transport.send(try AnySessionSyncEnvelope(envelope), mode: .reliableEventually, to: nil)
    for await erased in inbox {
        switch try engine.receive(erased.typed(as: Note.self)) {   // dedups by eventID
        case .applied, .duplicate, .ignored: break
        case .snapshotRequired: try await transport.requestSnapshot(sessionID: session, from: nil)
        }
        if engine.state.lines.count >= expected { break }
    }
    await transport.stop()
    return engine.state
}
// END README SWIFT EXAMPLE

@Suite("README Swift example against meshd", .serialized,
       .enabled(if: ChildProcess.executable("meshd") != nil && ChildProcess.executable("meshctl") != nil,
                "meshd/meshctl are not built (run `swift build` first)"))
struct ReadmeDaemonExampleTests {
    @Test func twoDevicesExchangeNotesThroughTheirDaemons() async throws {
        let pair = try await DaemonPair.start()
        defer { pair.stopNow() }
        let session = UUID()
        let laptop = SessionPeer(id: "laptop-notes", deviceClass: .desktop, appInstanceID: "1")
        let desktop = SessionPeer(id: "desktop-notes", deviceClass: .desktop, appInstanceID: "2")
        let states = try await withDeadline(30) { () -> [Notes] in
            async let a = runNotes(socketPath: pair.a.socketPath, me: laptop, session: session, say: "from the laptop", expected: 2)
            async let b = runNotes(socketPath: pair.b.socketPath, me: desktop, session: session, say: "from the desktop", expected: 2)
            return try await [a, b]
        }
        let both = try #require(states)
        for state in both {
            #expect(Set(state.lines) == ["from the laptop", "from the desktop"], "each device holds both notes once")
        }
    }

    @Test func theReadmeShowsThisExample() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let test = try String(contentsOf: here, encoding: .utf8)
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let begin = try #require(test.range(of: "// BEGIN README SWIFT EXAMPLE\n"))
        let end = try #require(test.range(of: "// END README SWIFT EXAMPLE"))
        let example = String(test[begin.upperBound..<end.lowerBound])
        #expect(readme.contains(example), "README.md must show the example between the markers exactly")
    }
}
