import APNsCore
import TestSupport
import Testing

@Suite struct PayloadTests {
    @Test func builderWritesCompactJSONInTheDocumentedOrder() throws {
        var builder = PayloadBuilder(alert: "You have a new message", badge: 3, sound: "ping.aiff")
        builder.contentAvailable = true
        builder.mutableContent = true
        builder.category = "MESSAGE"
        builder.threadID = "chat-7"
        builder.setCustomKey("messageFrom", to: "Caroline")
        builder.setCustomKey("ids", to: [1, 2.5, true, nil, ["nested": "ok"]])
        #expect(
            try builder.build().string
                == #"{"aps":{"alert":"You have a new message","badge":3,"sound":"ping.aiff","content-available":1,"mutable-content":1,"category":"MESSAGE","thread-id":"chat-7"},"messageFrom":"Caroline","ids":[1,2.5,true,null,{"nested":"ok"}]}"#
        )
    }

    @Test func alertDictionaryKeepsItsKeyOrderAndEscapes() throws {
        let alert = PayloadBuilder.AlertDictionary(
            title: "Grüße \"quoted\"", body: "line\nbreak\u{1}", locKey: "K", locArgs: ["a", "b"])
        let payload = try PayloadBuilder(alert: .dictionary(alert)).build()
        #expect(
            payload.string
                == #"{"aps":{"alert":{"title":"Grüße \"quoted\"","body":"line\nbreak\u0001","loc-key":"K","loc-args":["a","b"]}}}"#
        )
        _ = try Payload(json: payload.bytes)  // the output is valid JSON
    }

    @Test func builderRefusesACustomApsKeyAndNonFiniteNumbers() {
        var builder = PayloadBuilder(alert: "x")
        builder.setCustomKey("aps", to: 1)
        #expect(throws: LegacyAPNsError.self) { try builder.build() }
        var nan = PayloadBuilder()
        nan.setCustomKey("n", to: .double(.nan))
        #expect(throws: LegacyAPNsError.self) { try nan.build() }
    }

    @Test(arguments: [
        #"{"aps":{}}"#, "[]", "0", "-1.5e+10", #""text""#, "true", " {\"a\" : [ 1 , 2 ] } ",
        #"{"a":"\u00e9\ud83d\ude00\n"}"#, "{\"emoji\":\"👋\"}",
    ])
    func validJSONIsAccepted(_ text: String) throws {
        #expect(try Payload(json: text).string == text)
    }

    @Test(arguments: [
        ("", "no JSON value at byte 0"),
        (#"{"a":1,}"#, "unexpected '}', expected a string key at byte 7"),
        (#"{"a" 1}"#, "unexpected '1', expected ':' at byte 5"),
        ("[1 2]", "unexpected '2', expected ',' or ']' at byte 3"),
        ("01", "unexpected '1' after the JSON value at byte 1"),
        ("{\"a\":\"tab\there\"}", "control character 0x09 in a string must be escaped at byte 9"),
        (#"{"a":"\x"}"#, "invalid escape '\\'x'' at byte 7"),
        ("nul", "invalid literal, expected 'null' at byte 0"),
        ("{} {}", "unexpected '{' after the JSON value at byte 3"),
        ("\"unterminated", "unterminated string at byte 13"),
        ("-", "invalid number: expected a digit at byte 1"),
        ("1.", "invalid number: expected a digit after '.' at byte 2"),
    ])
    func invalidJSONIsRefusedWithAPosition(_ text: String, _ message: String) {
        #expect(throws: LegacyAPNsError(.invalidPayload, "payload is not valid JSON: \(message)")) {
            try Payload(json: text)
        }
    }

    @Test func invalidUTF8AndDeepNestingAreRefused() {
        #expect(throws: LegacyAPNsError.self) { try Payload(json: [0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: LegacyAPNsError.self) { try Payload(json: [0x22, 0xED, 0xA0, 0x80, 0x22]) }  // surrogate
        let deep = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        #expect(throws: LegacyAPNsError.self) { try Payload(json: deep) }
        let fine = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        #expect(throws: Never.self) { try Payload(json: fine) }
    }
}

@Suite struct StatusCodeTests {
    @Test func everyByteRoundTripsAndReadsUnsigned() throws {
        for byte in UInt8.min...UInt8.max {
            let response = ErrorResponse(status: StatusCode(rawValue: byte), identifier: 0xFFFF_FFFF)
            var decoder = FrameDecoder(configuration: .provider)
            decoder.append(response.bytes)
            #expect(try decoder.next() == .errorResponse(response))
        }
        #expect(StatusCode(rawValue: 128) == .protocolError)
        #expect(StatusCode(rawValue: 255).reason == "none (unknown)")
        #expect(StatusCode(rawValue: 9).reason == "unknown status 9")
        #expect(StatusCode.invalidToken.reason == "invalid token")
        #expect(StatusCode.allKnown.map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 128, 255])
    }
}

@Suite struct FrameEncoderTests {
    let token = try! DeviceToken(hexString: String(repeating: "ab", count: 32))

    @Test func enhancedAndSimpleFramesNeed32ByteTokens() throws {
        let short = PushNotification(token: try DeviceToken(hexString: "abcd"), payload: try Payload(json: "{}"))
        var writer = ByteWriter()
        #expect(
            throws: LegacyAPNsError(.invalidToken, "token has 2 bytes, expected 32 (64 hex digits) in enhanced frames")
        ) {
            try FrameEncoder().encode(short, as: .enhanced, into: &writer)
        }
        #expect(
            throws: LegacyAPNsError(.invalidToken, "token has 2 bytes, expected 32 (64 hex digits) in simple frames")
        ) {
            try FrameEncoder().encode(short, as: .simple, into: &writer)
        }
        try FrameEncoder().encode(short, as: .itemized, into: &writer)
        #expect(writer.count == 5 + 3 + 2 + 3 + 2)
    }

    @Test func payloadLimitIsCheckedInBytes() throws {
        // 2048 characters, but "é" takes 2 bytes in UTF-8: 2049 bytes in all.
        let text = #"{"a":""# + String(repeating: "x", count: 2039) + #"é"}"#
        #expect(text.count == 2048)
        let notification = PushNotification(token: token, payload: try Payload(json: text))
        #expect(notification.payload.count == 2049)
        var writer = ByteWriter()
        #expect(throws: LegacyAPNsError(.payloadTooLarge, "payload has 2049 bytes, the limit is 2048")) {
            try FrameEncoder().encode(notification, as: .enhanced, into: &writer)
        }
        #expect(writer.isEmpty)
        try FrameEncoder(maximumPayloadSize: 4096).encode(notification, as: .enhanced, into: &writer)
        #expect(throws: LegacyAPNsError.self) {
            try FrameEncoder(maximumPayloadSize: Payload.legacyMaximumSize).encode(
                PushNotification(token: token, payload: try Payload(json: String(repeating: " ", count: 300) + "1")),
                as: .itemized, into: &writer)
        }
    }

    @Test func identifierOverrideReplacesTheCallersIdentifier() throws {
        let notification = PushNotification(token: token, payload: try Payload(json: "{}"), identifier: 5)
        var writer = ByteWriter()
        try FrameEncoder().encode(notification, as: .enhanced, identifier: 0xDEAD_BEEF, into: &writer)
        var decoder = FrameDecoder()
        decoder.append(writer.bytes)
        guard case .notification(let decoded, _) = try decoder.next() else {
            Issue.record("no frame")
            return
        }
        #expect(decoded.identifier == 0xDEAD_BEEF)
    }

    @Test func writerReusesItsStorage() throws {
        let notification = PushNotification(token: token, payload: try Payload(json: "{}"))
        var writer = ByteWriter(capacity: 4096)
        for _ in 0..<10 {
            writer.clear()
            for _ in 0..<50 { try FrameEncoder().encode(notification, as: .enhanced, into: &writer) }
        }
        #expect(writer.capacity == 4096)
        #expect(writer.count == 50 * 47)
        writer.removeFirst(47)
        #expect(writer.count == 49 * 47)
    }
}
