import APNsCore
import Testing

/// The Live Activity payload: its bytes for each event, and every one of Apple's rules refusing
/// what breaks it, before anything is sent.
@Suite struct LiveActivityPayloadTests {
    struct Score: Encodable {
        var home: Int
        var away: Int
    }
    struct Match: Encodable {
        var home: String
        var away: String
    }

    @Test func startUpdateAndEndWriteApplesKeysInOrder() throws {
        let start = try LiveActivityPayload.start(
            timestamp: 1_767_225_600, contentState: Score(home: 0, away: 0), alert: "Kick-off",
            attributesType: "MatchAttributes", attributes: Match(home: "A", away: "B"))
        #expect(
            try start.build().string
                == #"{"aps":{"event":"start","timestamp":1767225600,"content-state":{"home":0,"away":0},"alert":"Kick-off","attributes-type":"MatchAttributes","attributes":{"home":"A","away":"B"}}}"#
        )
        var update = try LiveActivityPayload(
            event: .update, timestamp: 1_767_225_700, contentState: Score(home: 1, away: 0))
        update.staleDate = 1_767_226_000
        update.relevanceScore = 0.5
        #expect(
            try update.build().string
                == #"{"aps":{"event":"update","timestamp":1767225700,"content-state":{"home":1,"away":0},"stale-date":1767226000,"relevance-score":0.5}}"#
        )
        var end = try LiveActivityPayload(event: .end, timestamp: 1_767_231_000, contentState: Score(home: 2, away: 1))
        end.dismissalDate = 0
        #expect(
            try end.build().string
                == #"{"aps":{"event":"end","timestamp":1767231000,"content-state":{"home":2,"away":1},"dismissal-date":0}}"#
        )
        var channelStart = start
        channelStart.inputPushChannel = "dHN0LXU2Cg=="
        #expect(try channelStart.build().string.hasSuffix(#""input-push-channel":"dHN0LXU2Cg=="}}"#))
        var tokenStart = start
        tokenStart.inputPushToken = true
        #expect(try tokenStart.build().string.hasSuffix(#""input-push-token":1}}"#))
    }

    /// The start payload made another event: the fields only a start carries cleared.
    static func withoutStartFields(_ payload: inout LiveActivityPayload, _ event: LiveActivityPayload.Event) {
        payload.event = event
        payload.alert = nil
        payload.attributesType = nil
        payload.attributes = nil
    }

    struct Broken: Sendable, CustomTestStringConvertible {
        var name: String
        var change: @Sendable (inout LiveActivityPayload) -> Void
        var forBroadcast = false
        var message: String
        var testDescription: String { name }
    }

    static let broken: [Broken] = [
        Broken(name: "start without alert", change: { $0.alert = nil }, message: "aps.alert is required"),
        Broken(name: "start without type", change: { $0.attributesType = nil }, message: "aps.attributes-type"),
        Broken(name: "start without attributes", change: { $0.attributes = nil }, message: "aps.attributes (a JSON"),
        Broken(
            name: "attributes not an object", change: { $0.attributes = [1, 2] }, message: "aps.attributes (a JSON"),
        Broken(name: "content state not an object", change: { $0.contentState = "x" }, message: "aps.content-state"),
        Broken(
            name: "content state over 4 KB in a broadcast",
            change: {
                LiveActivityPayloadTests.withoutStartFields(&$0, .update)
                $0.contentState = ["s": .string(String(repeating: "x", count: 4100))]
            }, forBroadcast: true, message: "content-state has 4108 bytes; at most 4096"),
        Broken(
            name: "attributes over 4 KB",
            change: { $0.attributes = ["s": .string(String(repeating: "x", count: 4100))] },
            message: "at most 4096"),
        Broken(
            name: "token and channel",
            change: {
                $0.inputPushToken = true
                $0.inputPushChannel = "YQ=="
            },
            message: "not both"),
        Broken(name: "dismissal on start", change: { $0.dismissalDate = 1 }, message: "belongs to an end event"),
        Broken(
            name: "attributes on update",
            change: {
                $0.event = .update
                $0.alert = nil
            },
            message: "aps.attributes-type belongs to a start event"),
        Broken(
            name: "input token on end",
            change: {
                LiveActivityPayloadTests.withoutStartFields(&$0, .end)
                $0.inputPushToken = true
            },
            message: "aps.input-push-token belongs to a start event"),
        Broken(name: "broadcast start", change: { _ in }, forBroadcast: true, message: "cannot start"),
        Broken(
            name: "over 4096 bytes", change: { $0.alert = .text(String(repeating: "x", count: 4000)) },
            message: "at most 4096"),
    ]

    @Test(arguments: broken)
    func everyRuleRefusesWhatBreaksIt(_ broken: Broken) throws {
        var payload = try LiveActivityPayload.start(
            timestamp: 1, contentState: Score(home: 0, away: 0), alert: "a", attributesType: "T",
            attributes: Match(home: "A", away: "B"))
        broken.change(&payload)
        #expect {
            try payload.build(forBroadcast: broken.forBroadcast)
        } throws: { error in
            (error as? LegacyAPNsError)?.reason.contains(broken.message) == true
        }
    }

    @Test func anyPayloadIsCheckedByTheSameRules() throws {
        let good = try Payload(json: #"{"aps":{"event":"update","timestamp":5,"content-state":{"a":1}}}"#)
        #expect(LiveActivityPayload.problem(inPayload: good) == nil)
        #expect(LiveActivityPayload.problem(inPayload: good, forBroadcast: true) == nil)
        let cases: [(String, String)] = [
            (#"{"aps":{"alert":"hi"}}"#, "aps.event"),
            (#"{"aps":{"event":"pause","timestamp":5,"content-state":{}}}"#, "aps.event"),
            (#"{"aps":{"event":"update","content-state":{}}}"#, "aps.timestamp"),
            (#"{"aps":{"event":"update","timestamp":"5","content-state":{}}}"#, "aps.timestamp"),
            (#"{"aps":{"event":"end","timestamp":5}}"#, "aps.content-state"),
            (#"{"aps":{"event":"end","timestamp":5,"content-state":{},"stale-date":-1}}"#, "aps.stale-date"),
            (
                #"{"aps":{"event":"update","timestamp":5,"content-state":{},"relevance-score":"high"}}"#,
                "relevance-score"
            ),
            (
                #"{"aps":{"event":"update","timestamp":5,"content-state":{},"input-push-channel":"YQ=="}}"#,
                "start event"
            ),
            (#"[1]"#, "JSON object with an aps"),
        ]
        for (json, message) in cases {
            let problem = LiveActivityPayload.problem(inPayload: try Payload(json: json))
            #expect(problem?.contains(message) == true, "\(json): \(problem ?? "nil")")
        }
        let broadcastSized = try Payload(
            json:
                #"{"aps":{"event":"update","timestamp":5,"content-state":{"s":"\#(String(repeating: "x", count: 4100))"}}}"#
        )
        #expect(LiveActivityPayload.problem(inPayload: broadcastSized)?.contains("at most 4096") == true)
        #expect(
            LiveActivityPayload.problem(inPayload: broadcastSized, forBroadcast: true)?.contains("content-state has")
                == true)
    }

    @Test func aParsedJSONValueKeepsItsOrderAndTypes() throws {
        let value = try JSONValue(parsing: Array(#" {"b":[1,-2.5,"x\n",true,null],"a":{}} "#.utf8))
        #expect(value == ["b": [1, -2.5, "x\n", true, nil], "a": [:]])
        #expect(throws: LegacyAPNsError.self) { try JSONValue(parsing: Array(#"{"a":1,"a":2}"#.utf8)) }
        #expect(throws: LegacyAPNsError.self) { try JSONValue(parsing: Array(#"{"a":"#.utf8)) }
        #expect(throws: LegacyAPNsError.self) { try JSONValue(parsing: Array("1e999".utf8)) }
    }
}
