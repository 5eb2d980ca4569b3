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
