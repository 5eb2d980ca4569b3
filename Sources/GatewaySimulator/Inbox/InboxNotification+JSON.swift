import APNsCore

extension InboxNotification {
    /// The notification as one JSON object, the shape of the inbox's API (`GET /api/v1/notifications`):
    ///
    /// ```json
    /// {"id":3,"received":"2026-01-31T12:00:00.125Z","protocol":"http2","connection":1,
    ///  "token":"<hex>","topic":"com.example.app","pushType":"alert","priority":10,"expiry":0,
    ///  "status":"accepted","statusCode":200,"apnsId":"<uuid>","collapseId":null,
    ///  "payload":"<payload as a string>","headers":{":method":"POST",...},"frameHex":null}
    /// ```
    /// What the notification lacks is `null` (a binary frame has no topic, headers or push type; a
    /// rejection carries no payload). The payload is a JSON string of its bytes.
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
        if case .request(let request, let id) = content {
            apnsID = "\(id)"
            collapseID = request.collapseID
        }
        string("apnsId", apnsID)
        string("collapseId", collapseID)
        key("payload")
        if let payload { appendJSONString(payload, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
        key("headers")
        if case .request = content {
            bytes.append(UInt8(ascii: "{"))
            for (name, value) in headers { string(name, value) }
            bytes.append(UInt8(ascii: "}"))
        } else {
            bytes.append(contentsOf: "null".utf8)
        }
        string("frameHex", frameHex)
        bytes.append(UInt8(ascii: "}"))
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
