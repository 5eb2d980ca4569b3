/// One channel management request (Apple's "Sending channel management requests to APNs"), sent
/// to the management host (`api-manage-broadcast.push.apple.com:2196`, the sandbox on 2195):
///
/// | operation | request | success |
/// |---|---|---|
/// | ``Operation/create(_:)`` | `POST /1/apps/<bundle id>/channels`, body `{"message-storage-policy":N,"push-type":"LiveActivity"}` | 201, header `apns-channel-id` |
/// | ``Operation/read(_:)`` | `GET /1/apps/<bundle id>/channels`, header `apns-channel-id` | 200, the channel's body |
/// | ``Operation/delete(_:)`` | `DELETE /1/apps/<bundle id>/channels`, header `apns-channel-id` | 204 |
/// | ``Operation/list`` | `GET /1/apps/<bundle id>/all-channels` | 200, `{"channels":[...]}` |
///
/// The channel id travels in the header, never in the path. Every request may carry
/// `apns-request-id` (a UUID), which the answer echoes (or APNs makes one up).
public struct ChannelRequest: Hashable, Sendable {
    /// What to do.
    public enum Operation: Hashable, Sendable {
        /// Create a channel with this storage policy (fixed for its life).
        case create(MessageStoragePolicy)
        /// Read a channel's configuration.
        case read(ChannelID)
        /// Delete a channel (irreversible).
        case delete(ChannelID)
        /// List the app's channels in this environment.
        case list
    }

    /// The app's bundle id (no push-type suffix).
    public var bundleID: String
    /// The operation.
    public var operation: Operation
    /// `apns-request-id`, echoed in the answer.
    public var requestID: APNsID?

    /// The `push-type` of a channel's body: Apple's text spells it `LiveActivity`.
    public static let livePushType = "LiveActivity"

    /// Creates a request.
    public init(bundleID: String, operation: Operation, requestID: APNsID? = nil) {
        self.bundleID = bundleID
        self.operation = operation
        self.requestID = requestID
    }

    /// `POST`, `GET` or `DELETE`.
    public var method: String {
        switch operation {
        case .create: "POST"
        case .read, .list: "GET"
        case .delete: "DELETE"
        }
    }

    /// `/1/apps/<bundle id>/channels` or `/1/apps/<bundle id>/all-channels`.
    public var path: String {
        if case .list = operation { return "/1/apps/\(bundleID)/all-channels" }
        return "/1/apps/\(bundleID)/channels"
    }

    /// The JSON body (create only): `{"message-storage-policy":N,"push-type":"LiveActivity"}`.
    public var body: [UInt8] {
        guard case .create(let policy) = operation else { return [] }
        return Array(#"{"message-storage-policy":\#(policy.rawValue),"push-type":"\#(Self.livePushType)"}"#.utf8)
    }

    /// The channel the request is about (read, delete).
    public var channelID: ChannelID? {
        switch operation {
        case .read(let id), .delete(let id): id
        case .create, .list: nil
        }
    }

    /// Appends the request's header fields: pseudo-headers, `authorization` (token auth),
    /// `apns-request-id`, `apns-channel-id`, and `content-type` for a body.
    package func writeHeaders(into headers: inout HTTP2HeaderList, authority: String, authorizationToken: String?) {
        headers.append(name: ":method", value: method)
        headers.append(name: ":scheme", value: "https")
        headers.append(name: ":path", value: path, indexing: .never)
        headers.append(name: ":authority", value: authority)
        if let authorizationToken {
            headers.append(name: "authorization", prefix: "bearer ", value: authorizationToken, indexing: .never)
        }
        if let requestID { headers.append(name: "apns-request-id", value: requestID.description, indexing: .never) }
        if let channelID { headers.append(name: "apns-channel-id", value: channelID.rawValue, indexing: .never) }
        if !body.isEmpty { headers.append(name: "content-type", value: "application/json") }
    }
}

/// A channel's configuration, as read back: `{"message-storage-policy":1,"push-type":"LiveActivity"}`.
public struct ChannelConfiguration: Hashable, Sendable {
    /// The storage policy fixed at creation.
    public var storagePolicy: MessageStoragePolicy
    /// The push type (`LiveActivity`).
    public var pushType: String

    /// Creates a configuration.
    public init(storagePolicy: MessageStoragePolicy, pushType: String = ChannelRequest.livePushType) {
        self.storagePolicy = storagePolicy
        self.pushType = pushType
    }

    /// The JSON body APNs answers a read with.
    public var json: [UInt8] {
        var writer = JSONWriter()
        writer.writeRaw(#"{"message-storage-policy":\#(storagePolicy.rawValue),"push-type":"#)
        writer.writeString(pushType)
        writer.writeRaw("}")
        return writer.bytes
    }

    /// Reads a read's body; nil when it is not an object with a whole `message-storage-policy`.
    public init?(json bytes: [UInt8]) {
        let found: ChannelConfiguration? = bytes.withUnsafeBytes { raw in
            guard let members = try? JSONScanner.objectMembers(raw),
                let policy = members.last(where: { $0.key == "message-storage-policy" }),
                let number = JSONScanner.unsignedIntegerValue(raw, in: policy.value), let value = Int(exactly: number)
            else { return nil }
            let type = members.last(where: { $0.key == "push-type" }).flatMap {
                JSONScanner.stringValue(raw, in: $0.value)
            }
            return ChannelConfiguration(
                storagePolicy: MessageStoragePolicy(rawValue: value), pushType: type ?? ChannelRequest.livePushType)
        }
        guard let found else { return nil }
        self = found
    }
}

extension ChannelID {
    /// The ids of a list's body, `{"channels":["...", ...]}`. Apple's article also says the body
    /// is empty; an empty body is read as no channels. Nil when the body is neither.
    public static func list(fromJSON bytes: [UInt8]) -> [ChannelID]? {
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return [] }
        return bytes.withUnsafeBytes { raw -> [ChannelID]? in
            guard let members = try? JSONScanner.objectMembers(raw),
                let channels = members.last(where: { $0.key == "channels" })
            else { return nil }
            guard let array = try? JSONValue(parsing: Array(raw[channels.value])), case .array(let elements) = array
            else { return nil }
            var ids: [ChannelID] = []
            for element in elements {
                guard case .string(let text) = element, let id = ChannelID(text) else { return nil }
                ids.append(id)
            }
            return ids
        }
    }

    /// `{"channels":[...]}`, the list's body.
    public static func listJSON(_ ids: [ChannelID]) -> [UInt8] {
        var writer = JSONWriter()
        writer.writeRaw(#"{"channels":["#)
        for (index, id) in ids.enumerated() {
            if index > 0 { writer.writeRaw(",") }
            writer.writeString(id.rawValue)
        }
        writer.writeRaw("]}")
        return writer.bytes
    }
}
