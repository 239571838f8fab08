import Foundation
import SessionMesh

/// A session's timer anchor as daemons exchange and store it: instants in whole microseconds
/// since 1970 on the wall clock of the daemon that wrote it.
///
/// ```
/// sessionID 16 | feature str16 | revision u64 | startedAt i64 | accumulated i64 (µs)
/// | flags u8 (bit0 paused, bit1 pauseStartedAt, bit2 expectedEndAt, bit3 stepStartedAt)
/// | pauseStartedAt i64? | expectedEndAt i64? | stepStartedAt i64?
/// ```
struct DeliveryAnchorRecord: Sendable, Equatable {
    var sessionID: UUID
    var featureID: String
    var revision: UInt64
    var anchor: SessionTimerAnchor

    func encode(into writer: inout WireWriter) {
        writer.uuid(sessionID)
        writer.string16(featureID)
        writer.u64(revision)
        writer.i64(Self.micros(anchor.startedAt))
        writer.i64(Self.micros(seconds: anchor.accumulatedElapsedBeforeAnchor))
        var flags: UInt8 = anchor.isPaused ? 1 : 0
        if anchor.pauseStartedAt != nil { flags |= 2 }
        if anchor.expectedEndAt != nil { flags |= 4 }
        if anchor.stepStartedAt != nil { flags |= 8 }
        writer.u8(flags)
        for date in [anchor.pauseStartedAt, anchor.expectedEndAt, anchor.stepStartedAt].compactMap({ $0 }) {
            writer.i64(Self.micros(date))
        }
    }

    /// The record alone (what the store keeps).
    func encoded() -> [UInt8] {
        var writer = WireWriter(capacity: 64)
        encode(into: &writer)
        return writer.bytes
    }

    init(sessionID: UUID, featureID: String, revision: UInt64, anchor: SessionTimerAnchor) {
        self.sessionID = sessionID
        self.featureID = featureID
        self.revision = revision
        self.anchor = anchor
    }

    init(reading reader: inout WireReader) throws(WireFormatError) {
        sessionID = try reader.uuid("anchor session")
        featureID = try reader.featureID("anchor feature")
        revision = try reader.u64("anchor revision")
        let started = try reader.i64("anchor start")
        let accumulated = try reader.i64("anchor accumulated")
        let flags = try reader.u8("anchor flags")
        guard flags & 0xF0 == 0 else { throw WireFormatError(what: "anchor flags") }
        let pause = flags & 2 != 0 ? try reader.i64("anchor pause") : nil
        let end = flags & 4 != 0 ? try reader.i64("anchor end") : nil
        let step = flags & 8 != 0 ? try reader.i64("anchor step") : nil
        anchor = SessionTimerAnchor(startedAt: Self.date(started),
                                    accumulatedElapsedBeforeAnchor: Double(accumulated) / 1e6,
                                    pauseStartedAt: pause.map(Self.date), isPaused: flags & 1 != 0,
                                    expectedEndAt: end.map(Self.date), stepStartedAt: step.map(Self.date))
    }

    /// Decodes a stored record.
    init(stored bytes: [UInt8]) throws(WireFormatError) {
        var reader = WireReader(bytes)
        try self.init(reading: &reader)
        try reader.expectEnd("anchor record")
    }

    static func micros(_ date: Date) -> Int64 { micros(seconds: date.timeIntervalSince1970) }

    static func micros(seconds: Double) -> Int64 {
        guard seconds.isFinite else { return 0 }
        return Int64(max(min((seconds * 1e6).rounded(), 9.2e18), -9.2e18))
    }

    static func date(_ micros: Int64) -> Date { Date(timeIntervalSince1970: Double(micros) / 1e6) }
}
