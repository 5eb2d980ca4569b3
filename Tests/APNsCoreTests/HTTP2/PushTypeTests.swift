import APNsCore
import Testing

@Suite struct PushTypeTests {
    @Test(
        arguments: [
            (PushType.alert, "alert", nil, 4096),
            (.background, "background", nil, 4096),
            (.location, "location", ".location-query", 4096),
            (.voip, "voip", ".voip", 5120),
            (.complication, "complication", ".complication", 4096),
            (.fileProvider, "fileprovider", ".pushkit.fileprovider", 4096),
            (.mdm, "mdm", nil, 4096),
            (.liveActivity, "liveactivity", ".push-type.liveactivity", 4096),
            (.pushToTalk, "pushtotalk", ".voip-ptt", 4096),
            (.widgets, "widgets", ".push-type.widgets", 4096),
            (.controls, "controls", ".push-type.controls", 4096),
        ] as [(PushType, String, String?, Int)])
    func everyDocumentedTypeKnowsItsHeaderSuffixAndLimit(type: PushType, raw: String, suffix: String?, limit: Int) {
        #expect(type.rawValue == raw)
        #expect(PushType(rawValue: raw) == type)
        #expect(type.isKnown)
        #expect(type.requiredTopicSuffix == suffix)
        #expect(type.maximumPayloadSize == limit)
    }

    /// Background only for an `aps` holding just content-available, however the payload is spelt
    /// (the quick look for the word, and for escapes that could spell it, must agree with the parse).
    @Test(
        arguments: [
            (#"{"aps":{"content-available":1}}"#, PushType.background),
            (#"{ "aps" : { "content-available" : 1 } , "custom" : "x" }"#, .background),
            (#"{"aps":{"content\u002davailable":1}}"#, .background),
            (#"{"aps":{"alert":"hi"}}"#, .alert),
            (#"{"aps":{"alert":"content-available"}}"#, .alert),
            (#"{"aps":{"content-available":1,"sound":"default"}}"#, .alert),
            (#"{"custom":{"content-available":1}}"#, .alert),
            (#"{"aps":{"alert":"a \"quoted\" word"}}"#, .alert),
            (#"{}"#, .alert),
            (#"not json"#, .alert),
        ])
    func inferenceAgreesWithTheParseHoweverThePayloadIsSpelt(_ json: String, _ expected: PushType) {
        #expect(PushType.inferred(for: Payload(unvalidatedBytes: Array(json.utf8))) == expected)
    }

    /// The word-at-a-time look agrees with a plain search wherever the word or a backslash falls
    /// (across and at the edges of the eight-byte words, at the start and the end of the payload).
    @Test func theQuickLookFindsTheWordAndBackslashesAtEveryOffset() {
        let word = Array("content-available".utf8)
        func naive(_ bytes: [UInt8]) -> Bool {
            if bytes.contains(UInt8(ascii: "\\")) { return true }
            guard bytes.count >= word.count else { return false }
            return (0...(bytes.count - word.count)).contains { Array(bytes[$0..<($0 + word.count)]) == word }
        }
        var cases: [[UInt8]] = []
        for length in 0..<40 {
            let filler = Array(String(repeating: "x-y", count: 20).utf8.prefix(length))
            cases.append(filler)
            for offset in 0...length {
                cases.append(Array(filler[..<offset]) + word + Array(filler[offset...]))
                cases.append(Array(filler[..<offset]) + [UInt8(ascii: "\\")] + Array(filler[offset...]))
                // Almost the word: one byte off on either side of the hyphen.
                var near = Array(filler[..<offset]) + word + Array(filler[offset...])
                near[offset + (length % 2 == 0 ? 2 : 12)] = UInt8(ascii: "X")
                cases.append(near)
                cases.append(Array(filler[..<offset]) + word.prefix(12))
            }
        }
        for bytes in cases {
            #expect(
                bytes.withUnsafeBytes { PushType.mayNameContentAvailable($0) } == naive(bytes),
                "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    @Test func allKnownListsElevenTypesOnce() {
        #expect(PushType.allKnown.count == 11)
        #expect(Set(PushType.allKnown).count == 11)
    }

    @Test(arguments: ["Alert", "", "voip ", "newtype2030"])
    func unknownTypesSurviveWithoutRules(raw: String) {
        let type = PushType(rawValue: raw)
        #expect(type.rawValue == raw)
        #expect(type.description == raw)
        #expect(!type.isKnown)
        #expect(type.requiredTopicSuffix == nil)
        #expect(type.maximumPayloadSize == 4096)
    }
}

/// The per push type rules the client's checks and the simulator share.
@Suite struct PushTypeRuleTests {
    @Test func prioritiesFollowApplesTable() {
        #expect(PushType.background.problem(priority: .conservePower) == nil)
        #expect(PushType.background.problem(priority: .immediate)?.reason == .badPriority)
        #expect(PushType.background.problem(priority: .lowest)?.reason == .badPriority)
        #expect(PushType.liveActivity.problem(priority: .immediate) == nil)
        #expect(PushType.liveActivity.problem(priority: .conservePower) == nil)
        #expect(
            PushType.liveActivity.problem(priority: .lowest)?.explanation
                == "liveactivity pushes must use priority 10 or 5, not 1")
        for type in PushType.allKnown where type != .background && type != .liveActivity {
            for priority in Priority.http2Values { #expect(type.problem(priority: priority) == nil, "\(type)") }
        }
    }

    @Test func tokenOnlyTypesAreRefusedOverACertificate() {
        #expect(PushType.allKnown.filter(\.requiresTokenAuthentication) == [.location, .liveActivity])
        #expect(PushType.liveActivity.problem(usesTokens: false)?.reason == .topicDisallowed)
        #expect(PushType.location.problem(usesTokens: false)?.reason == .topicDisallowed)
        #expect(PushType.liveActivity.problem(usesTokens: true) == nil)
        #expect(PushType.alert.problem(usesTokens: false) == nil)
    }

    @Test func widgetsAndLiveActivityPayloadsAreRead() throws {
        #expect(PushType.widgets.problem(payload: try Payload(json: #"{"aps":{"content-changed":true}}"#)) == nil)
        for json in [
            #"{"aps":{}}"#, #"{"aps":{"content-changed":1}}"#, #"{"aps":{"content-changed":true,"alert":"x"}}"#,
        ] {
            #expect(PushType.widgets.problem(payload: try Payload(json: json))?.reason == .invalidPushType, "\(json)")
        }
        #expect(
            PushType.liveActivity.problem(payload: try Payload(json: #"{"aps":{"alert":"x"}}"#))?.reason
                == .invalidPushType)
        let big = #"{"aps":{"event":"update","attributes":{"s":"\#(String(repeating: "x", count: 4090))"}}}"#
        #expect(PushType.liveActivity.problem(payload: try Payload(json: big))?.reason == .payloadTooLarge)
        // Every other type's payload is not read at all.
        #expect(PushType.alert.problem(payload: Payload(unvalidatedBytes: Array("not json".utf8))) == nil)
    }

    @Test func theClientsCheckAppliesThemBeforeSending() throws {
        let token = try DeviceToken(hexString: String(repeating: "ab", count: 32))
        let update = try Payload(json: #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#)
        let request = try ProviderRequest(
            deviceToken: token, payload: update, topic: "com.example.app.push-type.liveactivity",
            pushType: .liveActivity, priority: .lowest)
        #expect(request.problem(usesTokens: true)?.reason == .badPriority)
        var atFive = request
        atFive.priority = .conservePower
        #expect(atFive.problem(usesTokens: true) == nil)
        #expect(atFive.problem(usesTokens: false)?.reason == .topicDisallowed)
        var widgets = atFive
        widgets.pushType = .widgets
        widgets.topic = "com.example.app.push-type.widgets"
        #expect(widgets.problem(usesTokens: true)?.reason == .invalidPushType)
    }
}
