import Foundation
import NIOCore

/// JSON bodies to and from `ByteBuffer`, the same way on both ends of the socket.
public enum LocalAPIJSON {
    /// Encodes `value` as compact UTF-8 JSON with sorted keys.
    public static func encode(_ value: some Encodable) throws -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(value)
        return ByteBuffer(bytes: data)
    }

    /// Decodes a body; an empty body reads as `{}`.
    ///
    /// Throws a `LocalAPIErrorBody` with code `bad-request` naming the operation and the
    /// problem (not the body, which may hold a secret such as a pairing code).
    public static func decode<Value: Decodable>(_ type: Value.Type, from body: ByteBuffer,
                                                operation: LocalAPIOperation) throws(LocalAPIErrorBody) -> Value {
        let bytes = body.readableBytes == 0 ? Array("{}".utf8) : Array(body.readableBytesView)
        do {
            return try JSONDecoder().decode(Value.self, from: Data(bytes))
        } catch let DecodingError.keyNotFound(key, context) {
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.badRequest,
                                    message: "\(operation.name): missing field '\(path(context.codingPath + [key]))'")
        } catch let DecodingError.typeMismatch(_, context) where context.codingPath.isEmpty {
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.badRequest,
                                    message: "\(operation.name): the body must be a JSON object")
        } catch let DecodingError.valueNotFound(_, context) where context.codingPath.isEmpty {
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.badRequest,
                                    message: "\(operation.name): the body must be a JSON object")
        } catch let DecodingError.typeMismatch(_, context) {
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.badRequest,
                                    message: "\(operation.name): field '\(path(context))' has the wrong type")
        } catch let DecodingError.valueNotFound(_, context) {
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.badRequest,
                                    message: "\(operation.name): field '\(path(context))' is null")
        } catch let DecodingError.dataCorrupted(context) where !context.codingPath.isEmpty {
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.badRequest,
                                    message: "\(operation.name): field '\(path(context))' has an invalid value")
        } catch {
            throw LocalAPIErrorBody(code: LocalAPIErrorBody.Code.badRequest,
                                    message: "\(operation.name): the body is not valid JSON")
        }
    }

    /// The field as a JSON reader writes it (`anchor.startedAt`, `ids[2]`), never Swift's own
    /// names for coding keys (`Index 2`).
    static func path(_ context: DecodingError.Context) -> String { path(context.codingPath) }

    static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue, key.stringValue.hasPrefix("Index ") || key.stringValue == String(index) {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text
    }
}
