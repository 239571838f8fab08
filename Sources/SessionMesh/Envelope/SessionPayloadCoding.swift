import Foundation

/// Turns a feature's typed payload (event or state) into the bytes an erased envelope or
/// snapshot carries, and back.
///
/// Both peers of a feature must use the same coding. The mesh never looks inside the bytes:
/// the wire encoding (``SessionWireCodec``) carries them as an opaque length-prefixed field.
public protocol SessionPayloadCoding: Sendable {
    /// Encodes a payload; throws whatever the underlying encoder throws.
    func encode<Value: Encodable>(_ value: Value) throws -> Data
    /// Decodes a payload of the given type; throws whatever the underlying decoder throws.
    func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value
}

/// The default payload coding: JSON via Foundation, with sorted keys so equal values give
/// equal bytes.
///
/// Dates are encoded as seconds since the reference date (Foundation's default), which is
/// exact for `Date` values.
public struct JSONSessionPayloadCoding: SessionPayloadCoding {
    /// Creates the coding.
    public init() {}

    /// Encodes `value` as JSON with sorted keys.
    public func encode<Value: Encodable>(_ value: Value) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(value)
    }

    /// Decodes JSON produced by ``encode(_:)``.
    public func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value {
        try JSONDecoder().decode(type, from: data)
    }
}
