import MeshDaemon
import Testing

@Suite("Local API slow-reader policy")
struct LocalAPIFlowControlTests {
    @Test func requestsBeyondTheInFlightLimitQueueAndReadingPauses() {
        var flow = LocalAPIFlowControl(maximumInFlight: 2, maximumQueued: 2)
        #expect(flow.requestArrived() == .start)
        #expect(flow.readRequested() == .forward)
        #expect(flow.requestArrived() == .start)
        #expect(flow.readRequested() == .hold(newlyPaused: true))
        #expect(flow.readRequested() == .hold(newlyPaused: false))
        #expect(flow.requestArrived() == .queue)
        #expect(flow.requestArrived() == .queue)
        #expect(flow.requestArrived() == .reject)

        var progress = flow.requestFinished()
        #expect(progress.startQueued == 1)
        #expect(!progress.resumeReading)
        progress = flow.requestFinished()
        #expect(progress.startQueued == 1)
        #expect(!progress.resumeReading)
        progress = flow.requestFinished()
        #expect(progress == .init(startQueued: 0, resumeReading: true, reportShed: nil))
        #expect(flow.readRequested() == .forward)
    }

    @Test func aClientThatDoesNotReadStopsNewWorkAndHasEventsShedAndReported() {
        var flow = LocalAPIFlowControl(maximumInFlight: 8, maximumQueued: 100)
        _ = flow.writabilityChanged(to: false)
        #expect(flow.requestArrived() == .queue)
        #expect(flow.readRequested() == .hold(newlyPaused: true))
        let first = flow.eventOffered()
        let second = flow.eventOffered()
        #expect(!first && !second)
        let progress = flow.writabilityChanged(to: true)
        #expect(progress == .init(startQueued: 1, resumeReading: true, reportShed: 2))
        let third = flow.eventOffered()
        #expect(third)
        #expect(flow.requestFinished() == .init(startQueued: 0, resumeReading: false, reportShed: nil))
    }
}
