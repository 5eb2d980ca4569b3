/// The header fields of one provider request as a server receives them, one field at a time, kept
/// for ``ProviderRequestValidator``.
///
/// Only the fields APNs defines are kept (the pseudo-headers, `authorization` and the `apns-*`
/// headers, those of channel management and broadcast among them); the rest (`content-type`, `user-agent`, ...) are skipped. A kept field that arrives a
/// second time is remembered as ``duplicate`` and its first value stays. The values are copied
/// into one buffer that ``reset()`` keeps, so a server reusing a head per stream allocates nothing
/// per request once it has grown; the positions live inline.
package struct ProviderRequestHead: Sendable {
    /// The fields a head keeps.
    package enum Field: Int, CaseIterable, Sendable, CustomStringConvertible {
        case method, scheme, path, authority, authorization, pushType, apnsID, expiration, priority, topic, collapseID
        /// `apns-channel-id` and `apns-request-id` (channel management and broadcast).
        case channelID, requestID

        /// The header name.
        package var description: String {
            switch self {
            case .method: ":method"
            case .scheme: ":scheme"
            case .path: ":path"
            case .authority: ":authority"
            case .authorization: "authorization"
            case .pushType: "apns-push-type"
            case .apnsID: "apns-id"
            case .expiration: "apns-expiration"
            case .priority: "apns-priority"
            case .topic: "apns-topic"
            case .collapseID: "apns-collapse-id"
            case .channelID: "apns-channel-id"
            case .requestID: "apns-request-id"
            }
        }
    }

    private var storage: [UInt8] = []
    private var starts = SIMD16<Int32>(repeating: 0)
    private var counts = SIMD16<Int32>(repeating: -1)
    /// The first kept field that arrived twice.
    package private(set) var duplicate: Field?

    /// An empty head.
    package init() {}

    /// Forgets every field and keeps the storage.
    package mutating func reset() {
        storage.removeAll(keepingCapacity: true)
        counts = SIMD16<Int32>(repeating: -1)
        duplicate = nil
    }

    /// Takes one received field (name lowercase, as HTTP/2 requires).
    package mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard let field = Self.field(named: name) else { return }
        let index = field.rawValue
        guard counts[index] < 0 else {
            if duplicate == nil { duplicate = field }
            return
        }
        starts[index] = Int32(storage.count)
        counts[index] = Int32(value.count)
        storage.append(contentsOf: value)
    }

    /// Takes one field given as text (for tests and tools).
    package mutating func add(name: String, value: String) {
        var name = name
        var value = value
        name.withUTF8 { nameBytes in
            value.withUTF8 { valueBytes in
                add(name: UnsafeRawBufferPointer(nameBytes), value: UnsafeRawBufferPointer(valueBytes))
            }
        }
    }

    /// Whether `field` arrived.
    package func contains(_ field: Field) -> Bool { counts[field.rawValue] >= 0 }

    /// Calls `body` with the value of `field` (nil when absent); the view is valid only inside `body`.
    package func withValue<Result>(
        _ field: Field, _ body: (UnsafeRawBufferPointer?) throws -> Result
    ) rethrows -> Result {
        let count = Int(counts[field.rawValue])
        guard count >= 0 else { return try body(nil) }
        let start = Int(starts[field.rawValue])
        return try storage.withUnsafeBytes { raw in
            try body(UnsafeRawBufferPointer(rebasing: raw[start..<(start + count)]))
        }
    }

    /// The value of `field` as text (invalid UTF-8 repaired), nil when absent.
    package func string(_ field: Field) -> String? {
        withValue(field) { $0.map { String(decoding: $0, as: UTF8.self) } }
    }

    /// The provider token of an `authorization: bearer <token>` field (the scheme in any case), for
    /// the caller's JWT check; nil when the field is absent or uses another scheme.
    package var bearerToken: String? {
        withValue(.authorization) { value -> String? in
            guard let value, value.count > 7, value[6] == UInt8(ascii: " ") else { return nil }
            for (offset, letter) in "bearer".utf8.enumerated() where value[offset] | 0x20 != letter { return nil }
            return String(decoding: UnsafeRawBufferPointer(rebasing: value[7...]), as: UTF8.self)
        }
    }

    private static func field(named name: UnsafeRawBufferPointer) -> Field? {
        switch name.count {
        case 5: return matches(name, ":path") ? .path : nil
        case 7:
            if matches(name, "apns-id") { return .apnsID }
            if matches(name, ":method") { return .method }
            return matches(name, ":scheme") ? .scheme : nil
        case 10:
            if matches(name, "apns-topic") { return .topic }
            return matches(name, ":authority") ? .authority : nil
        case 13:
            if matches(name, "apns-priority") { return .priority }
            return matches(name, "authorization") ? .authorization : nil
        case 14: return matches(name, "apns-push-type") ? .pushType : nil
        case 15:
            if matches(name, "apns-expiration") { return .expiration }
            if matches(name, "apns-channel-id") { return .channelID }
            return matches(name, "apns-request-id") ? .requestID : nil
        case 16: return matches(name, "apns-collapse-id") ? .collapseID : nil
        default: return nil
        }
    }

    @inline(__always)
    private static func matches(_ bytes: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        ProviderResponse.equals(bytes, text)
    }
}
