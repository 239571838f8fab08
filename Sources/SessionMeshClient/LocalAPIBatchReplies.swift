import MeshLocalAPI

/// The replies to the requests of one batch, collected on the connection's loop and handed to
/// the caller together, in request order, once every request has its answer (a reply or error
/// frame, or the connection's end).
///
/// Only the loop touches `answers`; the slot is what crosses to the caller.
final class LocalAPIBatchReplies: @unchecked Sendable {
    /// One answer per request: its reply or error frame, or why there is none.
    typealias Answer = Result<LocalAPIFrame, MeshClientError>

    let slot = LocalAPIReplySlot<[Answer]>()
    private var answers: [Answer?]
    private var remaining: Int

    init(count: Int) {
        answers = Array(repeating: nil, count: count)
        remaining = count
    }

    /// Records the answer of request `index` (the first one counts); completes the slot with
    /// the last. Call on the loop.
    func complete(_ index: Int, _ answer: Answer) {
        guard answers.indices.contains(index), answers[index] == nil else { return }
        answers[index] = answer
        remaining -= 1
        guard remaining == 0 else { return }
        let all = answers.map { $0 ?? .failure(MeshClientError.protocolViolation("no answer")) }
        answers = []
        slot.succeed(all)
    }

    /// Records `error` for every request without an answer yet. Call on the loop.
    func failRemaining(_ error: MeshClientError) {
        for index in answers.indices where answers[index] == nil { complete(index, .failure(error)) }
    }
}
