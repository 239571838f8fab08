import MeshLocalAPI
import NIOCore

/// The body of a request that takes no arguments (`status`, `peers`, `queue`): an empty body or
/// a JSON object, whose fields are ignored (a newer client may send some).
///
/// Unlike decoding `EmptyBody`, which accepts any JSON value, anything but an object (`[]`, `5`,
/// `"x"`, `null`) fails with a type mismatch, so the request gets `bad-request` as
/// docs/LOCAL-API.md says.
struct LocalAPIEmptyRequest: Decodable {
    /// Checks `body` of `operation`; throws `bad-request` naming the operation for anything but
    /// an empty body or a JSON object.
    static func check(_ body: ByteBuffer, operation: LocalAPIOperation) throws(LocalAPIErrorBody) {
        do {
            _ = try LocalAPIJSON.decode(Self.self, from: body, operation: operation)
        } catch {
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.badRequest,
                                    message: "\(operation.name): the body must be empty or a JSON object")
        }
    }


    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        _ = try decoder.container(keyedBy: AnyKey.self)
    }
}
