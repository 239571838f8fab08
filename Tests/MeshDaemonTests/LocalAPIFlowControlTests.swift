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

    @Test func runningRequestsAreBoundedByTheirBodyBytesTooAndALargeOneRunsAlone() {
        var flow = LocalAPIFlowControl(maximumInFlight: 100, maximumQueued: 100, maximumInFlightBytes: 1_000)
        #expect(flow.requestArrived(bytes: 400) == .start)
        #expect(flow.requestArrived(bytes: 600) == .start)
        #expect(flow.inFlightBytes == 1_000)
        #expect(flow.readRequested() == .hold(newlyPaused: true), "the byte budget is used up: reading pauses")
        #expect(flow.requestArrived(bytes: 1) == .queue, "nothing more starts, however small")
        #expect(flow.requestArrived(bytes: 5_000) == .queue, "and nothing overtakes what waits")
        #expect(flow.requestArrived(bytes: 10) == .queue)

        // The 1-byte request fits once 400 bytes are done; the 5 000-byte one waits for the room
        // of its own (it is larger than the budget: it runs when it is the only request).
        #expect(flow.requestFinished(bytes: 400) == .init(startQueued: 1, resumeReading: false, reportShed: nil))
        #expect(flow.requestFinished(bytes: 600) == .init(startQueued: 0, resumeReading: false, reportShed: nil))
        #expect(flow.requestFinished(bytes: 1) == .init(startQueued: 1, resumeReading: false, reportShed: nil))
        #expect(flow.inFlightBytes == 5_000)
        #expect(flow.requestFinished(bytes: 5_000) == .init(startQueued: 1, resumeReading: true, reportShed: nil))
        #expect(flow.inFlight == 1 && flow.inFlightBytes == 10)
        #expect(flow.readRequested() == .forward)
        #expect(flow.requestFinished(bytes: 10) == .init(startQueued: 0, resumeReading: false, reportShed: nil))
        #expect(flow.inFlight == 0 && flow.inFlightBytes == 0)
    }

    @Test func manySmallRequestsRunAtOnceUpToTheCount() {
        var flow = LocalAPIFlowControl(maximumInFlight: 256, maximumQueued: 100, maximumInFlightBytes: 8 << 20)
        for _ in 0..<256 { #expect(flow.requestArrived(bytes: 200) == .start) }
        #expect(flow.requestArrived(bytes: 200) == .queue)
        #expect(flow.inFlight == 256 && flow.inFlightBytes == 256 * 200)
    }
}
