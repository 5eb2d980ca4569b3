extension LiveActivityPayload {
    /// What breaks Apple's Live Activity rules in a payload (the table of ``LiveActivityPayload``),
    /// in words, or nil when it keeps them: the check of ``build(forBroadcast:)``, and of any
    /// payload `send --http2` is given for a `liveactivity` push (JSON Lines, `--payload`).
    public static func problem(inPayload payload: Payload, forBroadcast: Bool = false) -> String? {
        payload.bytes.withUnsafeBytes { problem(inPayloadJSON: $0, forBroadcast: forBroadcast) }
    }

    /// ``problem(inPayload:forBroadcast:)`` on a payload's bytes.
    package static func problem(inPayloadJSON bytes: UnsafeRawBufferPointer, forBroadcast: Bool = false) -> String? {
        let limit = forBroadcast ? PushType.broadcastMaximumPayloadSize : PushType.defaultMaximumPayloadSize
        if bytes.count > limit {
            return "the payload has \(bytes.count) bytes; a Live Activity \(forBroadcast ? "broadcast " : "")"
                + "may have at most \(limit)"
        }
        guard let members = try? JSONScanner.objectMembers(bytes),
            let apsMember = members.last(where: { $0.key == "aps" })
        else { return "a Live Activity payload is a JSON object with an aps object" }
        let aps = UnsafeRawBufferPointer(rebasing: bytes[apsMember.value])
        guard let keys = try? JSONScanner.objectMembers(aps) else { return "aps must be a JSON object" }
        func value(_ key: String) -> Range<Int>? { keys.last(where: { $0.key == key })?.value }
        func isObject(_ range: Range<Int>) -> Bool { aps[range.lowerBound] == UInt8(ascii: "{") }
        func isWhole(_ range: Range<Int>) -> Bool { JSONScanner.unsignedIntegerValue(aps, in: range) != nil }

        guard let eventRange = value("event"), let name = JSONScanner.stringValue(aps, in: eventRange),
            let event = Event(rawValue: name)
        else { return "aps.event must be \"start\", \"update\" or \"end\"" }
        if forBroadcast, event == .start { return "a broadcast cannot start a Live Activity (event start)" }
        guard let timestamp = value("timestamp"), isWhole(timestamp) else {
            return "aps.timestamp (whole seconds since 1970) is required"
        }
        guard let state = value("content-state"), isObject(state) else {
            return "aps.content-state (a JSON object) is required for \(event)"
        }
        let objectLimit = PushType.liveActivityObjectMaximumSize
        if state.count > objectLimit {
            return "aps.content-state has \(state.count) bytes; at most \(objectLimit) are allowed"
        }
        for key in ["stale-date", "dismissal-date"] {
            if let range = value(key), !isWhole(range) { return "aps.\(key) must be whole seconds since 1970" }
        }
        if let score = value("relevance-score"), !(aps[score.lowerBound] == UInt8(ascii: "-") || isNumber(aps[score])) {
            return "aps.relevance-score must be a number"
        }
        if event != .end, value("dismissal-date") != nil { return "aps.dismissal-date belongs to an end event" }
        let startOnly = ["attributes-type", "attributes", "input-push-token", "input-push-channel"]
        if event != .start, let key = startOnly.first(where: { value($0) != nil }) {
            return "aps.\(key) belongs to a start event"
        }
        if event == .start {
            if value("alert") == nil { return "aps.alert is required to start a Live Activity" }
            guard let type = value("attributes-type"), JSONScanner.stringValue(aps, in: type) != nil else {
                return "aps.attributes-type (the ActivityAttributes type's name) is required to start a Live Activity"
            }
            guard let attributes = value("attributes"), isObject(attributes) else {
                return "aps.attributes (a JSON object) is required to start a Live Activity"
            }
            if attributes.count > objectLimit {
                return "aps.attributes has \(attributes.count) bytes; at most \(objectLimit) are allowed"
            }
            if value("input-push-token") != nil, value("input-push-channel") != nil {
                return "give aps.input-push-token or aps.input-push-channel, not both"
            }
            if let channel = value("input-push-channel"), JSONScanner.stringValue(aps, in: channel) == nil {
                return "aps.input-push-channel must be a channel id (a string)"
            }
        }
        return nil
    }

    private static func isNumber(_ bytes: Slice<UnsafeRawBufferPointer>) -> Bool {
        guard let first = bytes.first else { return false }
        return first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9")
    }
}
