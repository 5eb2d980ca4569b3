/// Encodes any `Encodable` value as a ``JSONValue``, with the standard library's `Encoder`
/// protocol only (no Foundation), for custom payload data:
///
/// ```swift
/// struct Message: Encodable { var id: Int; var sender: String; var tags: [String]; var note: String? }
/// let value = try JSONValueEncoder().encode(Message(id: 7, sender: "bob", tags: ["new"], note: nil))
/// // .object([("id", 7), ("sender", "bob"), ("tags", ["new"])])
/// ```
///
/// - Object keys keep the order in which the value encodes them (for synthesised conformances:
///   the order of the stored properties), so payloads are byte-stable.
/// - `nil` optionals are left out of objects (`encodeIfPresent`), and are `null` elsewhere.
/// - Integers become ``JSONValue/integer(_:)``; one outside `Int` is refused. `Float` keeps its
///   short decimal form (`0.1`, not `0.10000000149011612`). Infinity and NaN are refused.
/// - Types with their own `encode(to:)` encode as they say: Foundation's `Date` as a number of
///   seconds since 2001, `Data` as an array of bytes, `URL` as an object. Encode those as strings
///   yourself if you want another form.
public struct JSONValueEncoder: Sendable {
    /// Creates an encoder.
    public init() {}

    /// Encodes `value`.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/invalidPayload`` naming the coding path when
    ///   a value cannot be JSON (a non-finite number, an integer outside `Int`), or whatever the
    ///   value's `encode(to:)` throws.
    public func encode(_ value: some Encodable) throws -> JSONValue {
        let root = Node()
        do {
            try value.encode(to: TreeEncoder(node: root, codingPath: []))
        } catch let error as EncodingError {
            if case .invalidValue(_, let context) = error {
                let path = context.codingPath.map(\.stringValue).joined(separator: ".")
                throw LegacyAPNsError(
                    .invalidPayload,
                    "cannot encode \(path.isEmpty ? "the value" : "'\(path)'") as JSON: \(context.debugDescription)",
                    underlying: LegacyAPNsError(.invalidPayload, "\(error)"))
            }
            throw LegacyAPNsError(.invalidPayload, "cannot encode the value as JSON: \(error)")
        }
        return root.value
    }
}

extension JSONValue {
    /// The JSON value of an `Encodable` (see ``JSONValueEncoder``).
    public init(encoding value: some Encodable) throws {
        self = try JSONValueEncoder().encode(value)
    }
}

/// One value under construction. A class, so that containers handed out by the encoder can fill
/// it in after they were created (the `Encoder` protocol works that way).
private final class Node {
    enum Content {
        case unset
        case value(JSONValue)
        case object([(key: String, node: Node)])
        case array([Node])
    }

    var content = Content.unset

    var value: JSONValue {
        switch content {
        case .unset: .object([])
        case .value(let value): value
        case .object(let members): .object(members.map { JSONMember($0.key, $0.node.value) })
        case .array(let nodes): .array(nodes.map(\.value))
        }
    }

    /// The child for `key`, created at the end, or the existing one (encoding a key again
    /// replaces its value in place, and a nested container for it adds to it).
    func child(_ key: String) -> Node {
        if case .object(let members) = content, let existing = members.first(where: { $0.key == key }) {
            return existing.node
        }
        var members: [(key: String, node: Node)] = []
        if case .object(let existing) = content { members = existing }
        let node = Node()
        members.append((key, node))
        content = .object(members)
        return node
    }

    func appendChild() -> Node {
        var nodes: [Node] = []
        if case .array(let existing) = content { nodes = existing }
        let node = Node()
        nodes.append(node)
        content = .array(nodes)
        return node
    }

    func becomeObject() {
        if case .object = content { return }
        content = .object([])
    }

    func becomeArray() {
        if case .array = content { return }
        content = .array([])
    }
}

/// Primitive values as JSON.
private enum Primitive {
    static func integer<Integer: BinaryInteger>(_ value: Integer, at path: [any CodingKey]) throws -> JSONValue {
        guard let exact = Int(exactly: value) else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: path, debugDescription: "\(value) does not fit a JSON integer (Int)"))
        }
        return .integer(exact)
    }

    static func number(_ value: Double, at path: [any CodingKey]) throws -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: path, debugDescription: "JSON cannot hold \(value)"))
        }
        return .double(value)
    }

    static func number(_ value: Float, at path: [any CodingKey]) throws -> JSONValue {
        // Float's shortest decimal form, as JSON encoders print it ("0.1", not Double(0.1f)).
        try number(Double(value.description) ?? Double(value), at: path)
    }
}

private struct TreeEncoder: Encoder {
    let node: Node
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.becomeObject()
        return KeyedEncodingContainer(KeyedContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.becomeArray()
        return UnkeyedContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(node: node, codingPath: codingPath)
    }
}

/// A key that is only a string (for `super`).
private struct NamedKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// An array index as a key, for coding paths.
private struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { intValue.map(String.init) ?? "" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    let codingPath: [any CodingKey]

    private func set(_ value: JSONValue, _ key: Key) { node.child(key.stringValue).content = .value(value) }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        set(try Primitive.number(value, at: codingPath + [key]), key)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        set(try Primitive.number(value, at: codingPath + [key]), key)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.integer(value), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.integer(Int(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.integer(Int(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.integer(Int(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws {
        set(try Primitive.integer(value, at: codingPath + [key]), key)
    }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        set(try Primitive.integer(value, at: codingPath + [key]), key)
    }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.integer(Int(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.integer(Int(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.integer(Int(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        set(try Primitive.integer(value, at: codingPath + [key]), key)
    }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try value.encode(to: TreeEncoder(node: node.child(key.stringValue), codingPath: codingPath + [key]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = node.child(key.stringValue)
        child.becomeObject()
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(node: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = node.child(key.stringValue)
        child.becomeArray()
        return UnkeyedContainer(node: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        TreeEncoder(node: node.child("super"), codingPath: codingPath + [NamedKey(stringValue: "super")])
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        TreeEncoder(node: node.child(key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]

    var count: Int {
        if case .array(let nodes) = node.content { return nodes.count }
        return 0
    }

    private var nextPath: [any CodingKey] { codingPath + [IndexKey(count)] }
    private func append(_ value: JSONValue) { node.appendChild().content = .value(value) }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try Primitive.number(value, at: nextPath)) }
    mutating func encode(_ value: Float) throws { append(try Primitive.number(value, at: nextPath)) }
    mutating func encode(_ value: Int) throws { append(.integer(value)) }
    mutating func encode(_ value: Int8) throws { append(.integer(Int(value))) }
    mutating func encode(_ value: Int16) throws { append(.integer(Int(value))) }
    mutating func encode(_ value: Int32) throws { append(.integer(Int(value))) }
    mutating func encode(_ value: Int64) throws { append(try Primitive.integer(value, at: nextPath)) }
    mutating func encode(_ value: UInt) throws { append(try Primitive.integer(value, at: nextPath)) }
    mutating func encode(_ value: UInt8) throws { append(.integer(Int(value))) }
    mutating func encode(_ value: UInt16) throws { append(.integer(Int(value))) }
    mutating func encode(_ value: UInt32) throws { append(.integer(Int(value))) }
    mutating func encode(_ value: UInt64) throws { append(try Primitive.integer(value, at: nextPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        let path = nextPath
        try value.encode(to: TreeEncoder(node: node.appendChild(), codingPath: path))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let path = nextPath
        let child = node.appendChild()
        child.becomeObject()
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(node: child, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath
        let child = node.appendChild()
        child.becomeArray()
        return UnkeyedContainer(node: child, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let path = nextPath
        return TreeEncoder(node: node.appendChild(), codingPath: path)
    }
}

private struct SingleValueContainer: SingleValueEncodingContainer {
    let node: Node
    let codingPath: [any CodingKey]

    private func set(_ value: JSONValue) { node.content = .value(value) }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(try Primitive.number(value, at: codingPath)) }
    mutating func encode(_ value: Float) throws { set(try Primitive.number(value, at: codingPath)) }
    mutating func encode(_ value: Int) throws { set(.integer(value)) }
    mutating func encode(_ value: Int8) throws { set(.integer(Int(value))) }
    mutating func encode(_ value: Int16) throws { set(.integer(Int(value))) }
    mutating func encode(_ value: Int32) throws { set(.integer(Int(value))) }
    mutating func encode(_ value: Int64) throws { set(try Primitive.integer(value, at: codingPath)) }
    mutating func encode(_ value: UInt) throws { set(try Primitive.integer(value, at: codingPath)) }
    mutating func encode(_ value: UInt8) throws { set(.integer(Int(value))) }
    mutating func encode(_ value: UInt16) throws { set(.integer(Int(value))) }
    mutating func encode(_ value: UInt32) throws { set(.integer(Int(value))) }
    mutating func encode(_ value: UInt64) throws { set(try Primitive.integer(value, at: codingPath)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try value.encode(to: TreeEncoder(node: node, codingPath: codingPath))
    }
}
