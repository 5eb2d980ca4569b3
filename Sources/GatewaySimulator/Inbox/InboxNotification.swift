import APNsCore
import APNsCredentials

/// One notification a simulator received, as ``PushInbox`` keeps it.
public struct InboxNotification: Sendable, Hashable {
    /// The protocol it arrived over.
    public enum Transport: String, Sendable, Hashable {
        /// The legacy binary protocol (``GatewaySimulator``).
        case binary
        /// The HTTP/2 provider API (``ProviderSimulator``).
        case http2
    }

    /// What the sender sent, as far as the simulator kept it.
    public enum Content: Sendable, Hashable {
        /// An accepted binary frame.
        case frame(Frame)
        /// An accepted HTTP/2 request (without its `authorization` value) and the `apns-id` it got.
        case request(ProviderRequest, apnsID: APNsID)
        /// A rejection: the simulator's events carry the token and the verdict, not the payload.
        case rejected
    }

    /// The inbox's number for it (1 for the first; given by the inbox when it is added).
    public var id: Int
    /// When the simulator handed it over: UNIX time in milliseconds.
    public var receivedMilliseconds: Int64
    /// Binary or HTTP/2.
    public var transport: Transport
    /// The simulator's number for the connection it came on.
    public var connection: Int
    /// The device token, when known.
    public var token: DeviceToken?
    /// `accepted`, or the verdict it got (the HTTP/2 reason, `BadDeviceToken`; the binary status
    /// and why, `8 invalid token`).
    public var status: String
    /// The HTTP status (200 for accepted HTTP/2 requests) or the binary status byte (0 for
    /// accepted frames).
    public var statusCode: Int
    /// The notification itself.
    public var content: Content

    /// A notification received now.
    public init(
        receivedMilliseconds: Int64, transport: Transport, connection: Int, token: DeviceToken?, status: String,
        statusCode: Int, content: Content
    ) {
        self.id = 0
        self.receivedMilliseconds = receivedMilliseconds
        self.transport = transport
        self.connection = connection
        self.token = token
        self.status = status
        self.statusCode = statusCode
        self.content = content
    }

    /// Whether the simulator accepted it.
    public var isAccepted: Bool { status == "accepted" }

    /// The `apns-topic` (HTTP/2; binary frames carry none).
    public var topic: String? {
        if case .request(let request, _) = content { return request.topic }
        return nil
    }

    /// The `apns-push-type` (HTTP/2).
    public var pushType: String? {
        if case .request(let request, _) = content { return request.pushType?.rawValue }
        return nil
    }

    /// The priority, when the sender gave one.
    public var priority: Int? {
        switch content {
        case .frame(.notification(let notification, _)): notification.priority.map { Int($0.rawValue) }
        case .request(let request, _): request.priority.map { Int($0.rawValue) }
        default: nil
        }
    }

    /// The expiry (UNIX seconds; 0: do not store), when the sender gave one.
    public var expiry: UInt64? {
        switch content {
        case .frame(.notification(let notification, _)): notification.expiration.map { UInt64($0.rawValue) }
        case .request(let request, _): request.expiration.map { UInt64($0.rawValue) }
        default: nil
        }
    }

    /// The payload's bytes (nil for rejections: the events do not carry them).
    public var payload: [UInt8]? {
        switch content {
        case .frame(.notification(let notification, _)): notification.payload.bytes
        case .request(let request, _): request.payload.bytes
        default: nil
        }
    }

    /// The request's headers as the simulator validated them (HTTP/2; `authorization` left out:
    /// it is a credential), in the order APNs documents them.
    public var headers: [(name: String, value: String)] {
        guard case .request(let request, _) = content else { return [] }
        var headers: [(name: String, value: String)] = [
            (":method", "POST"), (":path", ProviderRequest.pathPrefix + request.deviceToken.hexString),
        ]
        if let topic = request.topic { headers.append(("apns-topic", topic)) }
        if let pushType = request.pushType { headers.append(("apns-push-type", pushType.rawValue)) }
        if let id = request.apnsID { headers.append(("apns-id", "\(id)")) }
        if let expiration = request.expiration { headers.append(("apns-expiration", "\(expiration.rawValue)")) }
        if let priority = request.priority { headers.append(("apns-priority", "\(priority.rawValue)")) }
        if let collapse = request.collapseID { headers.append(("apns-collapse-id", collapse)) }
        return headers
    }

    /// The frame's bytes in hex (binary), encoded again from the decoded frame (the same bytes
    /// for frames in the documented layouts).
    public var frameHex: String? {
        guard case .frame(.notification(let notification, let command)) = content else { return nil }
        let format: FrameFormat =
            switch command {
            case .simple: .simple
            case .enhanced: .enhanced
            default: .itemized
            }
        var writer = ByteWriter()
        FrameEncoder.encodeValidated(
            notification, as: format, identifier: format == .simple ? nil : notification.identifier ?? 0,
            into: &writer)
        let bytes = writer.bytes
        return String(unsafeUninitializedCapacity: 2 * bytes.count) { output in
            bytes.withUnsafeBytes { DeviceToken.writeHex($0, into: UnsafeMutableRawBufferPointer(output)) }
        }
    }
}
