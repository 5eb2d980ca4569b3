extension Frame {
    /// The frame as one compact JSON object, the shape `legacy-push frame decode --json` prints
    /// and the gateway simulator records:
    ///
    /// ```json
    /// {"command":1,"id":1234,"expiry":0,"token":"<hex>","payload":"<payload as a string>","priority":null}
    /// {"command":8,"status":8,"id":1234}
    /// ```
    /// Fields a command lacks are `null`. The payload is a JSON string of its bytes (bytes that
    /// are not UTF-8 become U+FFFD).
    public var jsonLine: String {
        var bytes: [UInt8] = []
        appendJSON(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``jsonLine`` (without a newline) to `bytes`, without intermediate strings.
    public func appendJSON(to bytes: inout [UInt8]) {
        switch self {
        case .errorResponse(let response):
            bytes.append(contentsOf: #"{"command":8,"status":"#.utf8)
            appendDecimal(UInt64(response.status.rawValue), to: &bytes)
            bytes.append(contentsOf: #","id":"#.utf8)
            appendDecimal(UInt64(response.identifier), to: &bytes)
            bytes.append(UInt8(ascii: "}"))
        case .notification(let notification, let command):
            bytes.append(contentsOf: #"{"command":"#.utf8)
            appendDecimal(UInt64(command.rawValue), to: &bytes)
            bytes.append(contentsOf: #","id":"#.utf8)
            appendOptional(notification.identifier.map(UInt64.init), to: &bytes)
            bytes.append(contentsOf: #","expiry":"#.utf8)
            appendOptional(notification.expiration.map { UInt64($0.rawValue) }, to: &bytes)
            bytes.append(contentsOf: #","token":""#.utf8)
            let start = bytes.count
            let hexCount = notification.token.count * 2
            bytes.append(contentsOf: repeatElement(0, count: hexCount))
            bytes.withUnsafeMutableBytes { raw in
                notification.token.withUnsafeBytes { token in
                    _ = DeviceToken.writeHex(token, into: UnsafeMutableRawBufferPointer(rebasing: raw[start...]))
                }
            }
            bytes.append(contentsOf: #"","payload":"#.utf8)
            appendJSONString(notification.payload.bytes, to: &bytes)
            bytes.append(contentsOf: #","priority":"#.utf8)
            appendOptional(notification.priority.map { UInt64($0.rawValue) }, to: &bytes)
            bytes.append(UInt8(ascii: "}"))
        }
    }
}

@inline(__always)
private func appendOptional(_ value: UInt64?, to bytes: inout [UInt8]) {
    if let value { appendDecimal(value, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
}
