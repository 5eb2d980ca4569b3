extension JSONValue {
    /// Parses one JSON document (white space around it allowed) into a value; objects keep their
    /// members in order (a repeated key is refused, as ``PayloadBuilder`` would refuse it).
    ///
    /// ```swift
    /// let state = try JSONValue(parsing: Array(#"{"score":"2-1","minute":67}"#.utf8))
    /// ```
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/invalidPayload`` naming the offset of a syntax
    ///   error, a repeated key, or a number that is neither an `Int` nor a finite `Double`.
    public init(parsing bytes: [UInt8]) throws {
        self = try bytes.withUnsafeBytes { raw in
            do throws(JSONScanner.Failure) {
                try JSONScanner.validateDocument(raw)
            } catch {
                throw LegacyAPNsError(.invalidPayload, "not JSON: \(error.message) at byte \(error.offset)")
            }
            let start = JSONScanner.skipWhitespace(raw, from: 0)
            return try Self.parse(raw, from: start).value
        }
    }

    /// The value starting at `start` (a validated document) and where it ends.
    private static func parse(_ bytes: UnsafeRawBufferPointer, from start: Int) throws -> (value: JSONValue, end: Int) {
        let end = try skip(bytes, from: start)
        let text = { String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self) }
        switch bytes[start] {
        case UInt8(ascii: "{"):
            var members: [JSONMember] = []
            var index = JSONScanner.skipWhitespace(bytes, from: start + 1)
            while bytes[index] != UInt8(ascii: "}") {
                let keyEnd = try skip(bytes, from: index)
                guard let key = JSONScanner.stringValue(bytes, in: index..<keyEnd) else { break }
                if members.contains(where: { $0.key == key }) {
                    throw LegacyAPNsError(.invalidPayload, "key \"\(key)\" appears twice in one JSON object")
                }
                index = JSONScanner.skipWhitespace(bytes, from: JSONScanner.skipWhitespace(bytes, from: keyEnd) + 1)
                let (value, valueEnd) = try parse(bytes, from: index)
                members.append(JSONMember(key, value))
                index = JSONScanner.skipWhitespace(bytes, from: valueEnd)
                if bytes[index] == UInt8(ascii: ",") { index = JSONScanner.skipWhitespace(bytes, from: index + 1) }
            }
            return (.object(members), end)
        case UInt8(ascii: "["):
            var elements: [JSONValue] = []
            var index = JSONScanner.skipWhitespace(bytes, from: start + 1)
            while bytes[index] != UInt8(ascii: "]") {
                let (value, valueEnd) = try parse(bytes, from: index)
                elements.append(value)
                index = JSONScanner.skipWhitespace(bytes, from: valueEnd)
                if bytes[index] == UInt8(ascii: ",") { index = JSONScanner.skipWhitespace(bytes, from: index + 1) }
            }
            return (.array(elements), end)
        case UInt8(ascii: "\""):
            return (.string(JSONScanner.stringValue(bytes, in: start..<end) ?? ""), end)
        case UInt8(ascii: "t"): return (.bool(true), end)
        case UInt8(ascii: "f"): return (.bool(false), end)
        case UInt8(ascii: "n"): return (.null, end)
        default:
            let number = text()
            if let integer = Int(number) { return (.integer(integer), end) }
            guard let double = Double(number), double.isFinite else {
                throw LegacyAPNsError(.invalidPayload, "the number \(number) does not fit a Double")
            }
            return (.double(double), end)
        }
    }

    private static func skip(_ bytes: UnsafeRawBufferPointer, from start: Int) throws -> Int {
        do throws(JSONScanner.Failure) {
            return try JSONScanner.skipValue(bytes, from: start, depth: 1)
        } catch {
            throw LegacyAPNsError(.invalidPayload, "not JSON: \(error.message) at byte \(error.offset)")
        }
    }
}
