/// A JSON value for custom payload keys, with objects that keep their key order.
///
/// Write values as literals (`nil`, `true`, `42`, `1.5`, `"text \(name)"`, `[1, 2]`,
/// `["key": "value"]`), with the cases, or from any `Encodable` with ``init(encoding:)``.
public indirect enum JSONValue: Hashable, Sendable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A whole number, written without a fraction.
    case integer(Int)
    /// A number with a fraction; whole values below 10^18 are written without one. Infinity and
    /// NaN cannot be written (the payload is refused).
    case double(Double)
    /// A string: the text as it is (escaped for JSON when written). Not raw JSON: `.string("{}")`
    /// is the string `"{}"`, not an object.
    case string(String)
    /// An array, in order.
    case array([JSONValue])
    /// An object; members are written in this order. Duplicate keys are rejected when written.
    case object([JSONMember])
}

/// One key and value of a JSON object.
public struct JSONMember: Hashable, Sendable {
    /// The member's name.
    public var key: String
    /// The member's value.
    public var value: JSONValue

    /// Creates a member.
    public init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringInterpolation, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    /// `nil` is JSON `null`.
    public init(nilLiteral: ()) { self = .null }
    /// A JSON boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// A JSON integer.
    public init(integerLiteral value: Int) { self = .integer(value) }
    /// A JSON number with a fraction.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A JSON string (also `"an \(interpolated) string"`).
    public init(stringLiteral value: String) { self = .string(value) }
    /// A JSON array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// Members keep the order they are written in.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(elements.map { JSONMember($0.0, $0.1) })
    }
}

/// Writes compact JSON (no white space) as UTF-8 bytes.
package struct JSONWriter {
    package var bytes: [UInt8] = []

    package init() {}

    /// Continues after bytes already written.
    package init(appendingTo bytes: [UInt8]) {
        self.bytes = bytes
    }

    package mutating func write(_ value: JSONValue) throws {
        switch value {
        case .null: writeRaw("null")
        case .bool(let flag): writeRaw(flag ? "true" : "false")
        case .integer(let number): writeRaw(String(number))
        case .double(let number):
            guard number.isFinite else {
                throw LegacyAPNsError(.invalidPayload, "JSON cannot hold the number \(number)")
            }
            if let whole = Int(exactly: number), abs(whole) < 1_000_000_000_000_000 {
                writeRaw(String(whole))
            } else {
                writeRaw(String(number))
            }
        case .string(let text): writeString(text)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                try write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            try writeObject(members.map { ($0.key, $0.value) })
        }
    }

    /// Writes an object from ordered members, refusing duplicate keys.
    package mutating func writeObject(_ members: [(String, JSONValue)]) throws {
        var seen = Set<String>()
        bytes.append(UInt8(ascii: "{"))
        for (index, (key, value)) in members.enumerated() {
            guard seen.insert(key).inserted else {
                throw LegacyAPNsError(.invalidPayload, "key \"\(key)\" appears twice in one JSON object")
            }
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            writeString(key)
            bytes.append(UInt8(ascii: ":"))
            try write(value)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    package mutating func writeRaw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Writes a string literal (see ``appendJSONString(_:to:)``).
    package mutating func writeString(_ text: String) {
        appendJSONString(text, to: &bytes)
    }
}
