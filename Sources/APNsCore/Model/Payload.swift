/// The JSON body of a notification, as the exact bytes that go on the wire.
///
/// A payload is never re-serialised: whatever bytes it holds are sent byte for byte. Create one
/// from JSON you already have (`init(json:)`, validated), from bytes you trust
/// (``init(unvalidatedBytes:)``, for testing how a gateway treats bad payloads), or with
/// ``PayloadBuilder``.
///
/// The size limit depends on the gateway (2048 bytes since iOS 8, 256 before), so it is checked
/// when a frame is encoded, not here.
public struct Payload: Hashable, Sendable {
    /// The payload's bytes.
    public var bytes: [UInt8]

    /// The default limit of the binary interface since iOS 8.
    public static let defaultMaximumSize = 2048
    /// The limit of gateways before iOS 8.
    public static let legacyMaximumSize = 256

    /// Wraps bytes without looking at them.
    public init(unvalidatedBytes bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Creates a payload from UTF-8 JSON bytes, checking that they are one valid JSON value.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/invalidPayload`` naming the byte offset and
    ///   the problem.
    public init(json bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in try Self.validate(raw) }
        self.bytes = bytes
    }

    /// Creates a payload from a JSON string, checking that it is valid JSON.
    public init(json string: String) throws {
        try self.init(json: Array(string.utf8))
    }

    /// Checks that `bytes` are valid JSON, in the same words `init(json:)` uses.
    package static func validate(_ bytes: UnsafeRawBufferPointer) throws {
        do {
            try JSONScanner.validateDocument(bytes)
        } catch {
            throw LegacyAPNsError(
                .invalidPayload, "payload is not valid JSON: \(error.message) at byte \(error.offset)")
        }
    }

    /// The size in bytes.
    public var count: Int { bytes.count }

    /// The payload as text (invalid UTF-8 is repaired with U+FFFD).
    public var string: String { String(decoding: bytes, as: UTF8.self) }
}

extension Payload: CustomStringConvertible {
    /// The payload as text.
    public var description: String { string }
}
