import APNsCore

extension InboxNotification {
    /// The notification as one JSON object, the shape of the inbox's API (`GET /api/v1/notifications`):
    ///
    /// ```json
    /// {"id":3,"received":"2026-01-31T12:00:00.125Z","protocol":"http2","connection":1,
    ///  "token":"<hex>","topic":"com.example.app","pushType":"alert","priority":10,"expiry":0,
    ///  "status":"accepted","statusCode":200,"apnsId":"<uuid>","collapseId":null,
    ///  "payload":"<payload as a string>","headers":{":method":"POST",...},"frameHex":null,
    ///  "sender":null,"fate":"delivered","uniqueId":"<uuid>"}
    /// ```
    /// What the notification lacks is `null` (a binary frame has no topic, headers or push type; a
    /// rejection carries no payload). The payload is a JSON string of its bytes. A bridge's
    /// notification has its `sender`, the frame's hex, and the topic, push type and headers of the
    /// request it sent upstream; `statusCode` is the binary status it answered (0: none needed).
    public var json: String {
        var bytes: [UInt8] = []
        appendJSON(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``json`` to `bytes`.
    public func appendJSON(to bytes: inout [UInt8]) {
        func key(_ name: String) {
            bytes.append(contentsOf: (bytes.last == UInt8(ascii: "{") ? "\"" : ",\"").utf8)
            bytes.append(contentsOf: name.utf8)
            bytes.append(contentsOf: "\":".utf8)
        }
        func string(_ name: String, _ value: String?) {
            key(name)
            if let value { appendJSONString(value, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
        }
        func number(_ name: String, _ value: Int64?) {
            key(name)
            if let value {
                appendDecimal(value.magnitude, to: &bytes, negative: value < 0)
            } else {
                bytes.append(contentsOf: "null".utf8)
            }
        }
        bytes.append(UInt8(ascii: "{"))
        number("id", Int64(id))
        string("received", Self.rfc3339(milliseconds: receivedMilliseconds))
        string("protocol", transport.rawValue)
        number("connection", Int64(connection))
        string("token", token?.hexString)
        string("topic", topic)
        string("pushType", pushType)
        number("priority", priority.map(Int64.init))
        number("expiry", expiry.map { Int64($0) })
        string("status", status)
        number("statusCode", Int64(statusCode))
        var apnsID: String?
        var collapseID: String?
        switch content {
        case .request(let request, let id):
            apnsID = "\(id)"
            collapseID = request.collapseID
        case .bridged(_, let upstream?):
            apnsID = upstream.apnsID.map { "\($0)" }
            collapseID = upstream.collapseID
        default:
            break
        }
        string("apnsId", apnsID)
        string("collapseId", collapseID)
        key("payload")
        if let payload { appendJSONString(payload, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
        key("headers")
        if request != nil {
            bytes.append(UInt8(ascii: "{"))
            for (name, value) in headers { string(name, value) }
            bytes.append(UInt8(ascii: "}"))
        } else {
            bytes.append(contentsOf: "null".utf8)
        }
        string("frameHex", frameHex)
        string("sender", sender)
        string("fate", fate?.rawValue)
        string("uniqueId", uniqueID.map { "\($0)" })
        bytes.append(UInt8(ascii: "}"))
    }

    /// The delivery log as one JSON object (`GET /api/v1/deliveries/UNIQUE-ID`):
    ///
    /// ```json
    /// {"uniqueId":"<uuid>","apnsId":"<uuid>","id":3,"token":"<hex>","topic":"com.example.app",
    ///  "fate":"delivered","events":[{"event":"accepted","time":"2026-01-31T12:00:00.125Z","detail":null},
    ///  {"event":"stored","time":"...","detail":"the device is offline"},{"event":"delivered",...}]}
    /// ```
    public func appendDeliveryLog(to bytes: inout [UInt8]) {
        func field(_ name: String, _ value: String?, first: Bool = false) {
            bytes.append(contentsOf: ((first ? "\"" : ",\"") + name + "\":").utf8)
            if let value { appendJSONString(value, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
        }
        bytes.append(UInt8(ascii: "{"))
        field("uniqueId", uniqueID.map { "\($0)" }, first: true)
        var apnsID: String?
        if case .request(_, let id) = content { apnsID = "\(id)" }
        field("apnsId", apnsID)
        bytes.append(contentsOf: ",\"id\":\(id)".utf8)
        field("token", token?.hexString)
        field("topic", topic)
        field("fate", fate?.rawValue)
        bytes.append(contentsOf: ",\"events\":[".utf8)
        for (index, event) in deliveryEvents.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "{"))
            field("event", event.event, first: true)
            field("time", Self.rfc3339(milliseconds: event.milliseconds))
            field("detail", event.detail)
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(contentsOf: "]}".utf8)
    }

    /// The whole delivery log: accepted when received, then what ``deliveryLog`` holds (a push
    /// delivered at once while every device was online has no log of its own: it was delivered
    /// when received).
    public var deliveryEvents: [DeliveryEvent] {
        guard fate != nil else { return [] }
        var events = [DeliveryEvent(event: "accepted", milliseconds: receivedMilliseconds)]
        if deliveryLog.isEmpty, fate == .delivered {
            events.append(DeliveryEvent(event: "delivered", milliseconds: receivedMilliseconds))
        } else {
            events += deliveryLog
        }
        return events
    }

    /// `2026-01-31T12:00:00.125Z`.
    static func rfc3339(milliseconds: Int64) -> String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let fraction = milliseconds - seconds * 1000
        let whole = UTCTime.iso8601(seconds)
        let digits = String(fraction)
        return whole.dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }
}
