import APNsCore

/// One notification a simulator or a bridge received, as ``PushInbox`` keeps it.
public struct InboxNotification: Sendable, Hashable {
    /// The protocol it arrived over.
    public enum Transport: String, Sendable, Hashable {
        /// The legacy binary protocol (the binary simulator, or a bridge's senders).
        case binary
        /// The HTTP/2 provider API (the HTTP/2 simulator).
        case http2
    }

    /// What the sender sent, as far as the simulator kept it.
    public enum Content: Sendable, Hashable {
        /// An accepted binary frame.
        case frame(Frame)
        /// An accepted HTTP/2 request (without its `authorization` value) and the `apns-id` it got
        /// (boxed: a request is large, and a binary frame's notification stays small to copy).
        indirect case request(ProviderRequest, apnsID: APNsID)
        /// A rejection: the simulator's events carry the token and the verdict, not the payload.
        case rejected
        /// A binary frame a bridge received, and the HTTP/2 request it sent upstream for it (nil
        /// when the bridge answered it without a round trip: refused, dropped, or a resend
        /// acknowledged from memory).
        indirect case bridged(Frame, upstream: ProviderRequest?)
    }

    /// What became of an accepted push, as Apple's delivery log tells it (the HTTP/2 simulator's
    /// devices, ``DeviceStorage``).
    public enum Fate: String, Sendable, Hashable, CaseIterable {
        /// On the device: it was online, or came online while the push was stored.
        case delivered
        /// Kept for an offline device (the one push of its app APNs keeps for it).
        case stored
        /// Discarded while stored: a newer push for the same app and device took its place (or
        /// one with the same `apns-collapse-id`).
        case replaced
        /// Discarded: its `apns-expiration` passed while the device was offline (`0`: never
        /// stored, discarded at once).
        case expired
    }

    /// One line of a push's delivery log (``InboxNotification/deliveryLog``).
    public struct DeliveryEvent: Sendable, Hashable {
        /// `accepted`, `stored`, `delivered`, `replaced` or `expired`.
        public var event: String
        /// When: UNIX time in milliseconds.
        public var milliseconds: Int64
        /// Why, in words (nil when the event says it all).
        public var detail: String?

        /// An event.
        public init(event: String, milliseconds: Int64, detail: String? = nil) {
            self.event = event
            self.milliseconds = milliseconds
            self.detail = detail
        }
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
    /// Who sent it, in words, when the receiver knows more than a connection number (a bridge:
    /// the sender's certificate subject, or its address).
    public var sender: String?
    /// What became of it on the device (HTTP/2 simulator, accepted pushes; nil elsewhere).
    public var fate: Fate?
    /// Its delivery log, oldest first (HTTP/2 simulator, accepted pushes): accepted, then stored,
    /// delivered, replaced or expired, with times.
    public var deliveryLog: [DeliveryEvent] = []
    /// The `apns-unique-id` the simulator answered with (development), the delivery log's key.
    public var uniqueID: APNsID?

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

    /// The frame, when it came over the binary protocol and was kept.
    public var frame: Frame? {
        switch content {
        case .frame(let frame), .bridged(let frame, _): frame
        default: nil
        }
    }

    /// The HTTP/2 request: the one received (HTTP/2 simulator) or the one sent upstream (bridge).
    public var request: ProviderRequest? {
        switch content {
        case .request(let request, _): request
        case .bridged(_, let upstream): upstream
        default: nil
        }
    }

    /// Whether the simulator accepted it.
    public var isAccepted: Bool { status == "accepted" }

    /// The `apns-topic` (HTTP/2; binary frames carry none).
    /// (the request a bridge sent upstream carries the topic it chose).
    public var topic: String? { request?.topic }

    /// The `apns-push-type` (HTTP/2; a bridge's, inferred from the payload).
    public var pushType: String? { request?.pushType?.rawValue }

    /// The priority, when the sender gave one.
    public var priority: Int? {
        switch content {
        case .frame(.notification(let notification, _)), .bridged(.notification(let notification, _), _):
            notification.priority.map { Int($0.rawValue) }
        case .request(let request, _): request.priority.map { Int($0.rawValue) }
        default: nil
        }
    }

    /// The expiry (UNIX seconds; 0: do not store), when the sender gave one.
    public var expiry: UInt64? {
        switch content {
        case .frame(.notification(let notification, _)), .bridged(.notification(let notification, _), _):
            notification.expiration.map { UInt64($0.rawValue) }
        case .request(let request, _): request.expiration.map { UInt64($0.rawValue) }
        default: nil
        }
    }

    /// The payload's bytes (nil for rejections: the events do not carry them).
    public var payload: [UInt8]? {
        switch content {
        case .frame(.notification(let notification, _)), .bridged(.notification(let notification, _), _):
            notification.payload.bytes
        case .request(let request, _): request.payload.bytes
        default: nil
        }
    }

    /// The request's headers as the simulator validated them (HTTP/2; `authorization` left out:
    /// it is a credential), in the order APNs documents them; for a bridge, the headers it sent
    /// upstream.
    public var headers: [(name: String, value: String)] {
        guard let request else { return [] }
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
        guard case .notification(let notification, let command)? = frame else { return nil }
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
