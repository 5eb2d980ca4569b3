import APNsCore
import Testing

/// The `liveActivity` field of a JSON Lines line (HTTP/2 dialect): the `aps` of a Live Activity
/// in place of `payload`.
@Suite struct LiveActivityLineTests {
    static let hex = String(repeating: "ab", count: 32)
    static let parser = NotificationLineParser(dialect: .http2)

    static func parse(_ line: String) throws -> (payload: String, pushType: PushType?, topic: String?)? {
        var copy = line
        return try copy.withUTF8 { bytes in
            try parser.withParsedLine(UnsafeRawBufferPointer(bytes), lineNumber: 1) { parsed in
                (String(decoding: parsed.payload, as: UTF8.self), parsed.pushType, parsed.topic)
            }
        }
    }

    @Test func aLineCarriesTheApsAndTheTypeAndItsTopicGetsTheSuffix() throws {
        let state = #"{"event":"update","timestamp":5,"content-state":{"a":1}}"#
        let parsed = try Self.parse(#"{"token":"\#(Self.hex)","liveActivity":\#(state),"topic":"com.example.app"}"#)
        #expect(parsed?.payload == #"{"aps":\#(state)}"#)
        #expect(parsed?.pushType == .liveActivity)
        #expect(parsed?.topic == "com.example.app.push-type.liveactivity")
        let suffixed = try Self.parse(
            #"{"token":"\#(Self.hex)","liveActivity":\#(state),"topic":"com.example.app.push-type.liveactivity","pushType":"liveactivity"}"#
        )
        #expect(suffixed?.topic == "com.example.app.push-type.liveactivity")
    }

    @Test(arguments: [
        (#"{"token":"\#(hex)","liveActivity":"update"}"#, "\"liveActivity\" must be a JSON object"),
        (#"{"token":"\#(hex)","liveActivity":{},"payload":{}}"#, "not both"),
        (#"{"token":"\#(hex)","liveActivity":{},"pushType":"alert"}"#, "of pushType liveactivity, not alert"),
        (#"{"token":"\#(hex)"}"#, "missing \"payload\" (or \"liveActivity\")"),
    ])
    func mistakesNameTheLine(_ line: String, _ message: String) {
        #expect {
            _ = try Self.parse(line)
        } throws: { error in
            (error as? LegacyAPNsError)?.reason.contains("line 1: ") == true
                && (error as? LegacyAPNsError)?.reason.contains(message) == true
        }
    }

    @Test func theBinaryDialectDoesNotKnowTheField() {
        #expect(throws: LegacyAPNsError.self) {
            _ = try NotificationLineParser(dialect: .binary).parse(
                #"{"token":"\#(Self.hex)","liveActivity":{}}"#, lineNumber: 1)
        }
    }
}
