import Foundation
@testable import MeshDaemon
import MeshLocalAPI
import Testing

/// The daemon's errors reach a client through one mapping (LocalAPIErrorMapping.swift): every
/// kind gets a code docs/LOCAL-API.md lists, no two kinds share a code, the message is sent as
/// it is, and an error the daemon did not expect never shows its text.
@Suite("Local API error mapping")
struct LocalAPIErrorMappingTests {
    /// The codes docs/LOCAL-API.md (§5 and the data error codes) lists for the daemon's own
    /// failures, as clients (meshctl, clients/python) match them.
    static let documented: Set<String> = [
        "invalid-argument", "unknown-peer", "peer-not-active", "not-running", "stopping",
        "pairing-expired", "pairing-code-invalidated", "pairing-cancelled", "pairing-replaced",
        "pairing-code-used", "pairing-busy", "pairing-failed", "invalid-code", "unreachable",
        "pairing-refused", "already-paired", "inviter-ambiguous", "inviter-not-found", "discovery-off",
        "queue-full", "not-found", "session-closed", "store-failed", "delivery-unavailable",
        "too-many-attachments", "feature-not-allowed",
    ]

    @Test func everyKindHasItsOwnDocumentedCode() {
        // `alreadyRan` is the one kind no request can meet: only meshd's start-up runs a router.
        let kinds = MeshError.Kind.allCases.filter { $0 != .alreadyRan }
        let codes = kinds.map { LocalAPIErrorBody.code(of: $0) }
        #expect(Set(codes) == Self.documented)
        #expect(Set(codes).count == kinds.count)
    }

    @Test func theCodesClientsMatchStayAsTheyWere() {
        #expect(LocalAPIErrorBody(MeshError.unknownPeer("ABC")) ==
                LocalAPIErrorBody(code: "unknown-peer", message: "no paired device matches 'ABC'; see `meshctl peers`"))
        #expect(LocalAPIErrorBody(MeshError.pairingExpired).code == "pairing-expired")
        #expect(LocalAPIErrorBody(MeshError.queueFull("the outbox is full")) ==
                LocalAPIErrorBody(code: "queue-full", message: "the outbox is full"))
        #expect(LocalAPIErrorBody(MeshError.deliveryUnavailable).code == "delivery-unavailable")
        #expect(LocalAPIErrorBody(PairingError.wrongCode.controlError) ==
                LocalAPIErrorBody(code: "pairing-failed", message: "pairing failed: the code did not match; check it and try again"))
    }

    @Test func aStoreValueOutOfRangeIsTheCallersMistake() {
        let tooLarge = StoreError(code: .invalidArgument, operation: "put snapshot", path: "/state/delivery.sqlite",
                                  detail: "revision 18446744073709551615 is above 2^63−1")
        #expect(LocalAPIErrorBody(failure: MeshError.store(tooLarge)) ==
                LocalAPIErrorBody(code: "invalid-argument", message: "revision 18446744073709551615 is above 2^63−1"))
        let io = StoreError(code: .io, operation: "put snapshot", path: "/state/delivery.sqlite", detail: "disk I/O error")
        let body = LocalAPIErrorBody(failure: MeshError.store(io))
        #expect(body.code == "store-failed")
        #expect(body.message.contains("disk I/O error"))
    }

    @Test func otherFailuresKeepTheirBodyOrHideTheirText() {
        let body = LocalAPIErrorBody(code: "not-permitted", message: "not permitted: unpair")
        #expect(LocalAPIErrorBody(failure: body) == body)
        #expect(LocalAPIErrorBody(failure: CancellationError()).code == "shutting-down")
        struct Leaky: Error, CustomStringConvertible { var description: String { "secret /home/user/key" } }
        let hidden = LocalAPIErrorBody(failure: Leaky())
        #expect(hidden.code == "internal")
        #expect(!hidden.message.contains("secret"))
    }
}
