/// APNs' answer to one request: a status, the `apns-id`, and for failures a reason.
///
/// ```
/// success:  :status 200, apns-id, apns-unique-id (development only), no body
/// failure:  :status 4xx/5xx, apns-id, content-type: application/json,
///           body {"reason":"BadDeviceToken"}
///           410:  {"reason":"Unregistered","timestamp":1700000000000}   (milliseconds since 1970)
/// ```
///
/// The body's JSON form is written by ``encodeBody(into:)`` and read by `decodeBody(_:)`
/// (see `ProviderResponse+JSON.swift`); what to do about a response is ``retryAdvice``.
public struct ProviderResponse: Hashable, Sendable, CustomStringConvertible {
    /// The HTTP status (200 for success).
    public var status: Int
    /// Why the request failed; nil for success (and for a failure whose body said nothing).
    public var reason: ProviderReason?
    /// For 410: when the device token stopped being valid, in **milliseconds** since 1970.
    public var timestamp: UInt64?
    /// The notification's `apns-id` (the request's, or one APNs generated).
    public var apnsID: APNsID?
    /// The `apns-unique-id` APNs adds in the development environment, for its delivery log.
    public var apnsUniqueID: APNsID?

    /// Creates a response from its parts.
    public init(
        status: Int, reason: ProviderReason? = nil, timestamp: UInt64? = nil, apnsID: APNsID? = nil,
        apnsUniqueID: APNsID? = nil
    ) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.apnsID = apnsID
        self.apnsUniqueID = apnsUniqueID
    }

    /// A 200 response.
    public static func success(apnsID: APNsID?, apnsUniqueID: APNsID? = nil) -> ProviderResponse {
        ProviderResponse(status: 200, apnsID: apnsID, apnsUniqueID: apnsUniqueID)
    }

    /// A failure with a known reason, at the status the HNR table gives it (400 for a reason the
    /// table does not list).
    public init(rejecting reason: ProviderReason, apnsID: APNsID? = nil, timestamp: UInt64? = nil) {
        self.init(status: reason.status ?? 400, reason: reason, timestamp: timestamp, apnsID: apnsID)
    }

    /// Whether APNs accepted the notification.
    public var isSuccess: Bool { status == 200 }

    /// What a sender should do next (see ``RetryAdvice``).
    public var retryAdvice: RetryAdvice { RetryAdvice(self) }

    /// "200", "410 Unregistered (since 1700000000000 ms)".
    public var description: String {
        var text = String(status)
        if let reason { text += " \(reason)" }
        if let timestamp { text += " (since \(timestamp) ms)" }
        return text
    }

    // MARK: Headers

    /// Writes the response headers a server sends: `:status`, `apns-id`, `apns-unique-id` and, when
    /// there is a body, `content-type: application/json`.
    package func writeHeaders(into headers: inout HTTP2HeaderList) {
        // Three digits, written in place (statuses outside 100...999 are not HTTP).
        let value = max(100, min(self.status, 999))
        headers.append(name: ":status", valueCount: 3) { output in
            output[0] = UInt8(ascii: "0") + UInt8(value / 100)
            output[1] = UInt8(ascii: "0") + UInt8(value / 10 % 10)
            output[2] = UInt8(ascii: "0") + UInt8(value % 10)
        }
        if let apnsID {
            headers.append(name: "apns-id", valueCount: APNsID.textCount, indexing: .never) { apnsID.write(into: $0) }
        }
        if let apnsUniqueID {
            headers.append(name: "apns-unique-id", valueCount: APNsID.textCount, indexing: .never) {
                apnsUniqueID.write(into: $0)
            }
        }
        if hasBody { headers.append(name: "content-type", value: "application/json") }
    }

    /// Whether a server sends a JSON body with this response (every failure does).
    public var hasBody: Bool { reason != nil || timestamp != nil || !isSuccess }

    /// Takes one response header a client received: `:status`, `apns-id` and `apns-unique-id` are
    /// kept, everything else is ignored.
    ///
    /// - Returns: an error for a `:status` that is not three digits (the field is then left as it
    ///   was); a malformed `apns-id` is ignored rather than failing the response.
    package mutating func takeHeader(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> LegacyAPNsError? {
        if Self.equals(name, ":status") {
            guard value.count == 3, let number = Self.decimal(value) else {
                return LegacyAPNsError(
                    .malformedResponse,
                    "response :status is '\(String(decoding: value, as: UTF8.self))', expected three digits")
            }
            status = number
        } else if Self.equals(name, "apns-id") {
            apnsID = APNsID(utf8: value)
        } else if Self.equals(name, "apns-unique-id") {
            apnsUniqueID = APNsID(utf8: value)
        }
        return nil
    }

    /// Whether `bytes` are `text` (a header name or value): for 4 to 16 bytes, two overlapping
    /// word compares instead of a loop.
    static func equals(_ bytes: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard bytes.count == count else { return false }
        return text.withUTF8Buffer { expected in
            guard let given = bytes.baseAddress, let wanted = expected.baseAddress else { return true }
            let want = UnsafeRawPointer(wanted)
            switch count {
            case 8...16:
                return given.loadUnaligned(as: UInt64.self) == want.loadUnaligned(as: UInt64.self)
                    && given.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                        == want.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            case 4...7:
                return given.loadUnaligned(as: UInt32.self) == want.loadUnaligned(as: UInt32.self)
                    && given.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
                        == want.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            default:
                for index in 0..<count where bytes[index] != expected[index] { return false }
                return true
            }
        }
    }

    static func decimal(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
        var value = 0
        for byte in bytes {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value * 10 + Int(digit)
        }
        return value
    }
}
