/// One notification for the HTTP/2 provider API: `POST /3/device/<token hex>`.
///
/// | header | from | HPACK |
/// |---|---|---|
/// | `:method` `POST`, `:scheme` `https` | constant | indexed (static table) |
/// | `:path` `/3/device/<hex>` | ``deviceToken`` | never indexed (SNR) |
/// | `:authority` | the host | automatic |
/// | `authorization` `bearer <JWT>` | ``authorizationToken`` (token auth only) | never indexed (SNR) |
/// | `apns-push-type` | ``pushType`` | automatic |
/// | `apns-id` | ``apnsID`` | automatic on a connection's first request, never indexed after |
/// | `apns-expiration` | ``expiration`` | automatic on a connection's first request, never indexed after |
/// | `apns-priority` | ``priority`` | automatic |
/// | `apns-topic` | ``topic`` | automatic |
/// | `apns-collapse-id` | ``collapseID`` | automatic on a connection's first request, never indexed after |
/// | body | ``payload`` | (DATA) |
///
/// The HPACK column is Apple's rule (SNR): APNs keeps a small dynamic table, so values that change
/// with every request are sent as literals; their *names* are indexed once, on the first request of a
/// connection, so later requests refer to the names by index.
///
/// Absent optional fields are not sent: APNs then generates the `apns-id`, stores the notification
/// per its own policy, uses priority 10 and, for certificate auth with one topic, the certificate's
/// topic. The request carries what the client chose; the server's rules are
/// `ProviderRequestValidator`'s.
public struct ProviderRequest: Hashable, Sendable {
    /// The device: at least 32 bytes (APNs says not to assume a size; today's tokens have 32).
    public var deviceToken: DeviceToken
    /// The JSON body, sent byte for byte.
    public var payload: Payload
    /// `apns-topic`: the bundle id, with the push type's suffix where one is required.
    public var topic: String?
    /// `apns-push-type`.
    public var pushType: PushType?
    /// `apns-id`.
    public var apnsID: APNsID?
    /// `apns-expiration` (0: deliver once, do not store).
    public var expiration: Expiration?
    /// `apns-priority` (10, 5 or 1).
    public var priority: Priority?
    /// `apns-collapse-id` (at most 64 bytes are accepted).
    public var collapseID: String?
    /// The provider token (a JWT) for token auth; sent as `authorization: bearer <token>`. Nil for
    /// certificate auth.
    public var authorizationToken: String?
    /// The caller's own identifier, reported back in rejections and events and never sent (a
    /// JSON Lines `id`, a legacy sender's frame identifier in the bridge).
    public var identifier: UInt32?

    /// The path every notification is posted to, before the token's hex.
    public static let pathPrefix = "/3/device/"

    /// Creates a request.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/invalidToken`` when the token has fewer than 32
    ///   bytes: the binary gateway allowed short tokens, the HTTP/2 API never issued them.
    public init(
        deviceToken: DeviceToken, payload: Payload, topic: String? = nil, pushType: PushType? = nil,
        apnsID: APNsID? = nil, expiration: Expiration? = nil, priority: Priority? = nil, collapseID: String? = nil,
        authorizationToken: String? = nil, identifier: UInt32? = nil
    ) throws {
        try Self.checkToken(deviceToken)
        self.init(
            validatedToken: deviceToken, payload: payload, topic: topic, pushType: pushType, apnsID: apnsID,
            expiration: expiration, priority: priority, collapseID: collapseID,
            authorizationToken: authorizationToken, identifier: identifier)
    }

    /// Throws `invalidToken` for a token the HTTP/2 API cannot address (fewer than 32 bytes).
    package static func checkToken(_ deviceToken: DeviceToken) throws {
        guard deviceToken.count >= DeviceToken.standardByteCount else {
            throw LegacyAPNsError(
                .invalidToken,
                "token has \(deviceToken.count) bytes, the HTTP/2 API needs at least \(DeviceToken.standardByteCount)")
        }
    }

    /// Creates a request from a token already known to have at least 32 bytes.
    package init(
        validatedToken deviceToken: DeviceToken, payload: Payload, topic: String?, pushType: PushType?,
        apnsID: APNsID?, expiration: Expiration?, priority: Priority?, collapseID: String?,
        authorizationToken: String?, identifier: UInt32? = nil
    ) {
        self.deviceToken = deviceToken
        self.payload = payload
        self.topic = topic
        self.pushType = pushType
        self.apnsID = apnsID
        self.expiration = expiration
        self.priority = priority
        self.collapseID = collapseID
        self.authorizationToken = authorizationToken
        self.identifier = identifier
    }

    /// `/3/device/<lowercase hex>`.
    public var path: String { Self.pathPrefix + deviceToken.hexString }

    /// Appends the request's header fields, in the order of the table above, with the HPACK rule.
    ///
    /// - Parameters:
    ///   - authority: the `:authority` (the gateway's host name).
    ///   - isFirstOnConnection: true for the connection's first request, whose `apns-id`,
    ///     `apns-expiration` and `apns-collapse-id` may be indexed.
    package func writeHeaders(into headers: inout HTTP2HeaderList, authority: String, isFirstOnConnection: Bool) {
        writeHeaders(
            into: &headers, authority: authority, isFirstOnConnection: isFirstOnConnection, topic: topic,
            pushType: pushType, authorizationToken: authorizationToken)
    }

    /// ``writeHeaders(into:authority:isFirstOnConnection:)`` with the topic, push type and token
    /// given (a client applying its defaults and its connection's token without copying the
    /// request).
    package func writeHeaders(
        into headers: inout HTTP2HeaderList, authority: String, isFirstOnConnection: Bool, topic: String?,
        pushType: PushType?, authorizationToken: String?
    ) {
        let changing: HTTP2HeaderList.Indexing = isFirstOnConnection ? .automatic : .never
        headers.append(name: ":method", value: "POST")
        headers.append(name: ":scheme", value: "https")
        let prefixCount = Self.pathPrefix.utf8.count
        deviceToken.withUnsafeBytes { token in
            headers.append(name: ":path", valueCount: prefixCount + 2 * token.count, indexing: .never) { output in
                var index = 0
                for byte in Self.pathPrefix.utf8 {
                    output[index] = byte
                    index += 1
                }
                _ = DeviceToken.writeHex(token, into: UnsafeMutableRawBufferPointer(rebasing: output[index...]))
            }
        }
        headers.append(name: ":authority", value: authority)
        if let authorizationToken {
            headers.append(name: "authorization", prefix: "bearer ", value: authorizationToken, indexing: .never)
        }
        if let pushType { headers.append(name: "apns-push-type", value: pushType.rawValue) }
        if let apnsID {
            headers.append(name: "apns-id", valueCount: APNsID.textCount, indexing: changing) { apnsID.write(into: $0) }
        }
        if let expiration {
            headers.append(name: "apns-expiration", decimal: UInt64(expiration.rawValue), indexing: changing)
        }
        if let priority {
            switch priority.rawValue {
            case 10: headers.append(name: "apns-priority", value: "10")
            case 5: headers.append(name: "apns-priority", value: "5")
            case 1: headers.append(name: "apns-priority", value: "1")
            default: headers.append(name: "apns-priority", decimal: UInt64(priority.rawValue))
            }
        }
        if let topic { headers.append(name: "apns-topic", value: topic) }
        if let collapseID { headers.append(name: "apns-collapse-id", value: collapseID, indexing: changing) }
    }
}
