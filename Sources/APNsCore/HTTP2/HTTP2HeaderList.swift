/// An ordered list of HTTP/2 header fields, each with its HPACK indexing choice, kept as one
/// byte buffer plus offsets.
///
/// This is the form ``ProviderRequest`` and ``ProviderResponse`` write their headers in and the
/// HTTP/2 session submits from: no `String` per field, and a list that is cleared with
/// ``removeAll()`` and refilled reuses its storage, so building the headers of one request after
/// another allocates nothing once the buffers have grown.
///
/// ```
/// bytes:  |:method|POST|:path|/3/device/74...|apns-topic|com.example|...
/// fields: [(0,7 | 7,4 | automatic), (11,5 | 16,74 | never), (90,10 | 100,11 | automatic), ...]
/// ```
package struct HTTP2HeaderList: Sendable, CustomStringConvertible {
    /// How HPACK may encode a field (RFC 7541 §6.2).
    package enum Indexing: Hashable, Sendable {
        /// The encoder decides: usually "literal with incremental indexing", so later requests
        /// can refer to the field by index.
        case automatic
        /// "Literal never indexed": the value stays out of both dynamic tables (for secrets and
        /// values that never repeat).
        case never
    }

    /// Where one field's name and value sit in ``bytes``.
    package struct Field: Hashable, Sendable {
        package var nameStart: Int32
        package var nameCount: Int32
        package var valueStart: Int32
        package var valueCount: Int32
        package var indexing: Indexing
    }

    /// The names and values, back to back.
    package private(set) var bytes: [UInt8]
    /// The fields in order.
    package private(set) var fields: [Field]

    /// An empty list with room for `byteCapacity` bytes of names and values.
    package init(byteCapacity: Int = 512, fieldCapacity: Int = 12) {
        bytes = []
        bytes.reserveCapacity(byteCapacity)
        fields = []
        fields.reserveCapacity(fieldCapacity)
    }

    /// How many fields there are.
    package var count: Int { fields.count }

    /// Removes every field and keeps the storage.
    package mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
    }

    /// Appends a field whose name and value are both known when compiling.
    package mutating func append(name: StaticString, value: StaticString, indexing: Indexing = .automatic) {
        let nameStart = appendRaw(name)
        let valueStart = appendRaw(value)
        record(nameStart, name.utf8CodeUnitCount, valueStart, value.utf8CodeUnitCount, indexing)
    }

    /// Appends a field with a constant name and the value's bytes.
    package mutating func append(name: StaticString, value: UnsafeRawBufferPointer, indexing: Indexing = .automatic) {
        let nameStart = appendRaw(name)
        let valueStart = bytes.count
        bytes.append(contentsOf: value)
        record(nameStart, name.utf8CodeUnitCount, valueStart, value.count, indexing)
    }

    /// Appends a field with a constant name and a text value (its UTF-8 bytes).
    package mutating func append(name: StaticString, value: String, indexing: Indexing = .automatic) {
        let nameStart = appendRaw(name)
        let valueStart = bytes.count
        bytes.append(contentsOf: value.utf8)
        record(nameStart, name.utf8CodeUnitCount, valueStart, bytes.count - valueStart, indexing)
    }

    /// Appends a field from raw name and value bytes (names must already be lowercase).
    package mutating func append(
        name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, indexing: Indexing = .automatic
    ) {
        let nameStart = bytes.count
        bytes.append(contentsOf: name)
        let valueStart = bytes.count
        bytes.append(contentsOf: value)
        record(nameStart, name.count, valueStart, value.count, indexing)
    }

    /// Appends a field whose value `body` writes in place: exactly `valueCount` bytes, all of which
    /// it must set (a token's hex, an `apns-id`, a number), so no intermediate string is built.
    package mutating func append(
        name: StaticString, valueCount: Int, indexing: Indexing = .automatic,
        writingValue body: (UnsafeMutableRawBufferPointer) -> Void
    ) {
        let nameStart = appendRaw(name)
        let valueStart = bytes.count
        // Written on the stack, then copied in one piece (values are short: a path, an id).
        withUnsafeTemporaryAllocation(byteCount: valueCount, alignment: 1) { value in
            body(value)
            bytes.append(contentsOf: UnsafeRawBufferPointer(value))
        }
        record(nameStart, name.utf8CodeUnitCount, valueStart, valueCount, indexing)
    }

    /// Appends a field whose value is `prefix` followed by `value` (`bearer <JWT>`), without
    /// building the joined string.
    package mutating func append(
        name: StaticString, prefix: StaticString, value: String, indexing: Indexing = .automatic
    ) {
        let nameStart = appendRaw(name)
        let valueStart = appendRaw(prefix)
        bytes.append(contentsOf: value.utf8)
        record(nameStart, name.utf8CodeUnitCount, valueStart, bytes.count - valueStart, indexing)
    }

    /// Appends a field whose value is a number in decimal digits.
    package mutating func append(name: StaticString, decimal value: UInt64, indexing: Indexing = .automatic) {
        var digitCount = 1
        var probe = value
        while probe >= 10 {
            probe /= 10
            digitCount += 1
        }
        append(name: name, valueCount: digitCount, indexing: indexing) { output in
            var remaining = value
            for index in stride(from: digitCount - 1, through: 0, by: -1) {
                output[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            }
        }
    }

    private mutating func appendRaw(_ text: StaticString) -> Int {
        let start = bytes.count
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
        return start
    }

    private mutating func record(
        _ nameStart: Int, _ nameCount: Int, _ valueStart: Int, _ valueCount: Int, _ indexing: Indexing
    ) {
        fields.append(
            Field(
                nameStart: Int32(nameStart), nameCount: Int32(nameCount), valueStart: Int32(valueStart),
                valueCount: Int32(valueCount), indexing: indexing))
    }

    /// The name of field `index` as text (for tests and messages; hot paths use ``bytes``).
    package func name(at index: Int) -> String {
        let field = fields[index]
        return String(decoding: bytes[Int(field.nameStart)..<Int(field.nameStart + field.nameCount)], as: UTF8.self)
    }

    /// The value of field `index` as text (for tests and messages; hot paths use ``bytes``).
    package func value(at index: Int) -> String {
        let field = fields[index]
        return String(
            decoding: bytes[Int(field.valueStart)..<Int(field.valueStart + field.valueCount)], as: UTF8.self)
    }

    /// The first value of the field called `name`, as text.
    package func value(forName name: String) -> String? {
        (0..<count).first { self.name(at: $0) == name }.map { value(at: $0) }
    }

    /// `name: value` lines, one per field.
    package var description: String {
        (0..<count).map { "\(name(at: $0)): \(value(at: $0))" }.joined(separator: "\n")
    }
}
