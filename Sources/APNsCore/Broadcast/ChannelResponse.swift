/// APNs's answer to a channel management or broadcast request.
///
/// ```
/// create:     :status 201, apns-request-id, apns-channel-id, no body
/// read:       :status 200, apns-request-id, body {"message-storage-policy":1,"push-type":"LiveActivity"}
/// delete:     :status 204, apns-request-id
/// list:       :status 200, apns-request-id, body {"channels":["...", ...]}
/// broadcast:  :status 200, apns-request-id, apns-unique-id (development)
/// failure:    :status 4xx/5xx, apns-request-id, content-type: application/json, body {"reason":"..."}
/// ```
///
/// These answers carry `apns-request-id`, not `apns-id`.
public struct ChannelResponse: Hashable, Sendable, CustomStringConvertible {
    /// The HTTP status.
    public var status: Int
    /// Why the request failed; nil for success.
    public var reason: ProviderReason?
    /// `apns-request-id`: the request's, or one APNs made up.
    public var requestID: APNsID?
    /// `apns-channel-id` (create).
    public var channelID: ChannelID?
    /// `apns-unique-id` (a broadcast in development).
    public var uniqueID: APNsID?
    /// The body of a success (read, list); a failure's body is written from ``reason``.
    public var body: [UInt8]

    /// Creates a response.
    public init(
        status: Int, reason: ProviderReason? = nil, requestID: APNsID? = nil, channelID: ChannelID? = nil,
        uniqueID: APNsID? = nil, body: [UInt8] = []
    ) {
        self.status = status
        self.reason = reason
        self.requestID = requestID
        self.channelID = channelID
        self.uniqueID = uniqueID
        self.body = body
    }

    /// A failure at the reason's status (400 for a reason Apple does not list).
    public init(rejecting reason: ProviderReason, requestID: APNsID? = nil) {
        self.init(status: reason.status ?? 400, reason: reason, requestID: requestID)
    }

    /// Whether the request succeeded (2xx).
    public var isSuccess: Bool { (200..<300).contains(status) }

    /// "201", "400 BadChannelId".
    public var description: String { reason.map { "\(status) \($0)" } ?? String(status) }

    /// The bytes a server sends as the body: a failure's `{"reason":"..."}`, else ``body``.
    public var bodyBytes: [UInt8] {
        guard let reason, !isSuccess else { return body }
        return ProviderResponse(status: status, reason: reason).bodyBytes
    }

    /// Writes the headers a server sends.
    package func writeHeaders(into headers: inout HTTP2HeaderList) {
        headers.append(name: ":status", decimal: UInt64(max(100, min(status, 999))))
        if let requestID { headers.append(name: "apns-request-id", value: requestID.description, indexing: .never) }
        if let channelID { headers.append(name: "apns-channel-id", value: channelID.rawValue, indexing: .never) }
        if let uniqueID { headers.append(name: "apns-unique-id", value: uniqueID.description, indexing: .never) }
        if !bodyBytes.isEmpty { headers.append(name: "content-type", value: "application/json") }
    }

    /// Takes one header a client received (`:status`, `apns-request-id`, `apns-channel-id`,
    /// `apns-unique-id`); the rest is ignored, a malformed id too.
    package mutating func takeHeader(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        if ProviderResponse.equals(name, ":status") {
            status = ProviderResponse.decimal(value) ?? status
        } else if ProviderResponse.equals(name, "apns-request-id") {
            requestID = APNsID(utf8: value)
        } else if ProviderResponse.equals(name, "apns-channel-id") {
            channelID = ChannelID(utf8: value)
        } else if ProviderResponse.equals(name, "apns-unique-id") {
            uniqueID = APNsID(utf8: value)
        }
    }

    /// Takes the body a client received: kept, and for a failure its `reason` read.
    package mutating func takeBody(_ bytes: [UInt8]) {
        body = bytes
        if !isSuccess, case .success(let decoded) = ProviderResponse.decodeBody(bytes) { reason = decoded.reason }
    }
}
