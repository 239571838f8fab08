import Foundation

/// Reads the JSON of a vector file into objects, with errors a person can act on.
enum VectorFile {
    /// The vector objects in `contents`: `{"vectors": [...]}` or, when `allowSingle`, one object.
    static func objects(_ contents: [UInt8], allowSingle: Bool) throws -> [[String: Any]] {
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: Data(contents))
        } catch {
            throw CryptoError(.invalidVectorFile, "the file is not valid JSON")
        }
        if let root = json as? [String: Any] {
            if let vectors = root["vectors"] {
                guard let list = vectors as? [Any] else {
                    throw CryptoError(.invalidVectorFile, "\"vectors\" is not an array")
                }
                return try list.enumerated().map { index, item in
                    guard let object = item as? [String: Any] else {
                        throw CryptoError(.invalidVectorFile, "vector \(index + 1) is not a JSON object")
                    }
                    return object
                }
            }
            if allowSingle { return [root] }
            throw CryptoError(.invalidVectorFile, "expected an object with a \"vectors\" array")
        }
        if let list = json as? [Any] {
            return list.compactMap { $0 as? [String: Any] }
        }
        throw CryptoError(.invalidVectorFile, "expected a JSON object")
    }

    /// The value of `key`, nil when absent or JSON `null` (the Noise vector format lets optional
    /// keys be "null or omitted entirely").
    static func value(_ object: [String: Any], _ key: String) -> Any? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        return value
    }

    /// A hex field: nil when absent or null; throws when present but not hex.
    static func hex(_ object: [String: Any], _ key: String) throws -> [UInt8]? {
        guard let value = value(object, key) else { return nil }
        guard let text = value as? String, let bytes = Hex.decode(text) else {
            throw CryptoError(.invalidVectorFile, "field \(key) is not a hex string")
        }
        return bytes
    }

    /// A list of hex strings (or a single one): nil when absent or null.
    static func hexList(_ object: [String: Any], _ key: String) throws -> [[UInt8]]? {
        guard let value = value(object, key) else { return nil }
        if value is String { return try hex(object, key).map { [$0] } }
        guard let list = value as? [Any] else { throw CryptoError(.invalidVectorFile, "field \(key) is not a list") }
        return try list.map {
            guard let text = $0 as? String, let bytes = Hex.decode(text) else {
                throw CryptoError(.invalidVectorFile, "field \(key) holds a value that is not hex")
            }
            return bytes
        }
    }
}
