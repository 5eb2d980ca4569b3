import APNsCore
import Testing

/// Every row of the validator's table, then the order between rows.
@Suite struct ProviderRequestValidatorTests {
    static let hex = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"
    static let id = "123e4567-e89b-12d3-a456-4266554400a0"
    static let certificate = ProviderAuthorization.certificate(topics: ["com.example.app", "com.example.app.voip"])
    static let base: [(String, String)] = [
        (":method", "POST"), (":scheme", "https"), (":path", "/3/device/" + hex), (":authority", "api.push.apple.com"),
        ("apns-topic", "com.example.app"), ("apns-push-type", "alert"), ("apns-id", id),
    ]
    static let payload = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

    /// One request: the base with some fields replaced (nil value: removed) or added again.
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var replace: [(String, String?)] = []
        var add: [(String, String)] = []
        var body: [UInt8] = ProviderRequestValidatorTests.payload
        var authorization = ProviderRequestValidatorTests.certificate
        var reason: ProviderReason?

        var testDescription: String { name }

        func head() -> ProviderRequestHead {
            var fields = ProviderRequestValidatorTests.base
            for (name, value) in replace {
                if let index = fields.firstIndex(where: { $0.0 == name }) {
                    if let value { fields[index].1 = value } else { fields.remove(at: index) }
                } else if let value {
                    fields.append((name, value))
                }
            }
            var head = ProviderRequestHead()
            for (name, value) in fields + add { head.add(name: name, value: value) }
            return head
        }

        func outcome() -> ProviderRequestValidator.Outcome {
            ProviderRequestValidator.validate(head(), body: body, authorization: authorization)
        }
    }

    static let hex63 = String(hex.dropLast())
    static func body(_ count: Int) -> [UInt8] { [UInt8](repeating: 0x20, count: count) }

    static let rows: [Case] = [
        // 1
        Case(name: "GET", replace: [(":method", "GET")], reason: .methodNotAllowed),
        Case(name: "no :method", replace: [(":method", nil)], reason: .methodNotAllowed),
        // 2
        Case(name: "another path", replace: [(":path", "/3/devices/" + hex)], reason: .badPath),
        Case(name: "root path", replace: [(":path", "/")], reason: .badPath),
        Case(name: "no slash after device", replace: [(":path", "/3/device")], reason: .badPath),
        Case(name: "no :path", replace: [(":path", nil)], reason: .badPath),
        // 3
        Case(name: "no token", replace: [(":path", "/3/device/")], reason: .missingDeviceToken),
        // 4
        Case(name: "63 digits", replace: [(":path", "/3/device/" + hex63)], reason: .badDeviceToken),
        Case(name: "62 digits", replace: [(":path", "/3/device/" + String(hex.dropLast(2)))], reason: .badDeviceToken),
        Case(name: "65 digits", replace: [(":path", "/3/device/" + hex + "a")], reason: .badDeviceToken),
        Case(name: "not hex", replace: [(":path", "/3/device/" + hex63 + "g")], reason: .badDeviceToken),
        Case(name: "a query", replace: [(":path", "/3/device/" + hex + "?x=1")], reason: .badDeviceToken),
        Case(
            name: "202 digits", replace: [(":path", "/3/device/" + String(repeating: "ab", count: 101))],
            reason: .badDeviceToken),
        Case(name: "uppercase token", replace: [(":path", "/3/device/" + hex.uppercased())]),
        Case(name: "66 digits", replace: [(":path", "/3/device/" + hex + "00")]),
        Case(name: "200 digits", replace: [(":path", "/3/device/" + String(repeating: "ab", count: 100))]),
        // 5
        Case(name: "topic twice", add: [("apns-topic", "com.example.app")], reason: .duplicateHeaders),
        Case(name: "apns-id twice", add: [("apns-id", id)], reason: .duplicateHeaders),
        Case(name: "an unknown header twice", add: [("x-trace", "1"), ("x-trace", "2")]),
        // 6
        Case(
            name: "expired provider token", authorization: .token(.rejected(.expiredProviderToken)),
            reason: .expiredProviderToken),
        Case(
            name: "missing provider token", authorization: .token(.rejected(.missingProviderToken)),
            reason: .missingProviderToken),
        Case(name: "accepted provider token", authorization: .token(.accepted(topics: nil))),
        // 7
        Case(name: "no topic, certificate with two", replace: [("apns-topic", nil)], reason: .missingTopic),
        Case(
            name: "no topic, token auth", replace: [("apns-topic", nil)], authorization: .token(.accepted(topics: nil)),
            reason: .missingTopic),
        Case(
            name: "no topic, certificate with one", replace: [("apns-topic", nil)],
            authorization: .certificate(topics: ["com.example.app"])),
        // 8
        Case(name: "empty topic", replace: [("apns-topic", "")], reason: .badTopic),
        Case(name: "topic with a space", replace: [("apns-topic", "com.example app")], reason: .badTopic),
        // 9
        Case(name: "another app's topic", replace: [("apns-topic", "com.other.app")], reason: .topicDisallowed),
        Case(
            name: "a topic outside the team", replace: [("apns-topic", "com.other.app")],
            authorization: .token(.accepted(topics: ["com.example.app"])), reason: .topicDisallowed),
        Case(
            name: "any topic, team unknown", replace: [("apns-topic", "com.other.app")],
            authorization: .token(.accepted(topics: nil))),
        // 10
        Case(name: "push type in capitals", replace: [("apns-push-type", "Alert")], reason: .invalidPushType),
        Case(name: "empty push type", replace: [("apns-push-type", "")], reason: .invalidPushType),
        Case(name: "no push type", replace: [("apns-push-type", nil)]),
        // 11
        Case(name: "priority 7", replace: [("apns-priority", "7")], reason: .badPriority),
        Case(name: "priority 05", replace: [("apns-priority", "05")], reason: .badPriority),
        Case(name: "empty priority", replace: [("apns-priority", "")], reason: .badPriority),
        Case(name: "priority 1", replace: [("apns-priority", "1")]),
        // 12
        Case(name: "negative expiration", replace: [("apns-expiration", "-1")], reason: .badExpirationDate),
        Case(name: "expiration in words", replace: [("apns-expiration", "tomorrow")], reason: .badExpirationDate),
        Case(name: "expiration past 32 bits", replace: [("apns-expiration", "4294967296")], reason: .badExpirationDate),
        Case(name: "empty expiration", replace: [("apns-expiration", "")], reason: .badExpirationDate),
        Case(name: "expiration 0", replace: [("apns-expiration", "0")]),
        Case(name: "expiration 4294967295", replace: [("apns-expiration", "4294967295")]),
        // 13
        Case(name: "short apns-id", replace: [("apns-id", "123")], reason: .badMessageId),
        Case(name: "uppercase apns-id", replace: [("apns-id", id.uppercased())]),
        Case(name: "no apns-id", replace: [("apns-id", nil)]),
        // 14
        Case(
            name: "collapse id of 65 bytes", replace: [("apns-collapse-id", String(repeating: "c", count: 65))],
            reason: .badCollapseId),
        Case(
            name: "collapse id of 33 two-byte characters",
            replace: [("apns-collapse-id", String(repeating: "é", count: 33))], reason: .badCollapseId),
        Case(name: "collapse id of 64 bytes", replace: [("apns-collapse-id", String(repeating: "c", count: 64))]),
        // 15
        Case(name: "empty body", body: [], reason: .payloadEmpty),
        // 16
        Case(name: "4097 bytes", body: body(4097), reason: .payloadTooLarge),
        Case(name: "4096 bytes", body: body(4096)),
        Case(
            name: "4097 bytes, no push type", replace: [("apns-push-type", nil)], body: body(4097),
            reason: .payloadTooLarge),
        Case(
            name: "voip 5121 bytes", replace: [("apns-push-type", "voip"), ("apns-topic", "com.example.app.voip")],
            body: body(5121), reason: .payloadTooLarge),
        Case(
            name: "voip 5120 bytes", replace: [("apns-push-type", "voip"), ("apns-topic", "com.example.app.voip")],
            body: body(5120)),
        // 17
        Case(
            name: "background at priority 10", replace: [("apns-push-type", "background"), ("apns-priority", "10")],
            reason: .badPriority),
        Case(name: "background at priority 5", replace: [("apns-push-type", "background"), ("apns-priority", "5")]),
        Case(name: "background without priority", replace: [("apns-push-type", "background")]),
        // 18
        Case(name: "voip to the bundle id", replace: [("apns-push-type", "voip")], reason: .badTopic),
        Case(
            name: "live activity without its suffix", replace: [("apns-push-type", "liveactivity")],
            authorization: .token(.accepted(topics: nil)), reason: .badTopic),
        Case(
            name: "live activity with its suffix", replace: liveActivity, body: liveActivityBody,
            authorization: .token(.accepted(topics: nil))),
        // 17
        Case(
            name: "background at priority 1", replace: [("apns-push-type", "background"), ("apns-priority", "1")],
            reason: .badPriority),
        Case(
            name: "live activity at priority 1", replace: liveActivity + [("apns-priority", "1")],
            body: liveActivityBody, authorization: .token(.accepted(topics: nil)), reason: .badPriority),
        Case(
            name: "live activity at priority 5", replace: liveActivity + [("apns-priority", "5")],
            body: liveActivityBody, authorization: .token(.accepted(topics: nil))),
        // 19
        Case(
            name: "live activity over a certificate", replace: liveActivity, body: liveActivityBody,
            authorization: .certificate(topics: ["com.example.app.push-type.liveactivity"]), reason: .topicDisallowed),
        Case(
            name: "location over a certificate",
            replace: [("apns-push-type", "location"), ("apns-topic", "com.example.app.location-query")],
            authorization: .certificate(topics: ["com.example.app.location-query"]), reason: .topicDisallowed),
        Case(
            name: "location with a token",
            replace: [("apns-push-type", "location"), ("apns-topic", "com.example.app.location-query")],
            authorization: .token(.accepted(topics: nil))),
        // 20
        Case(
            name: "widgets without content-changed",
            replace: [("apns-push-type", "widgets"), ("apns-topic", "com.example.app.push-type.widgets")],
            authorization: .token(.accepted(topics: nil)), reason: .invalidPushType),
        Case(
            name: "widgets with content-changed",
            replace: [("apns-push-type", "widgets"), ("apns-topic", "com.example.app.push-type.widgets")],
            body: Array(#"{"aps":{"content-changed":true}}"#.utf8), authorization: .token(.accepted(topics: nil))),
        Case(
            name: "live activity without an event", replace: liveActivity,
            authorization: .token(.accepted(topics: nil)), reason: .invalidPushType),
        Case(
            name: "live activity content state over 4 KB", replace: liveActivity,
            body: Array(
                (#"{"aps":{"event":"update","timestamp":1,"content-state":{"s":""#
                    + String(repeating: "x", count: 4090) + #""}}}"#).utf8),
            authorization: .token(.accepted(topics: nil)), reason: .payloadTooLarge),
    ]

    static let liveActivity: [(String, String?)] = [
        ("apns-push-type", "liveactivity"), ("apns-topic", "com.example.app.push-type.liveactivity"),
    ]
    static let liveActivityBody = Array(#"{"aps":{"event":"update","timestamp":1,"content-state":{"score":1}}}"#.utf8)

    @Test(arguments: rows)
    func everyRowDecides(_ row: Case) {
        switch (row.outcome(), row.reason) {
        case (.accepted, nil): break
        case (.rejected(let response), let reason?):
            #expect(response.reason == reason)
            #expect(response.status == reason.status)
        case (let outcome, let reason):
            Issue.record("\(row.name): expected \(reason.map { "\($0)" } ?? "acceptance"), got \(outcome)")
        }
    }

    /// Two faults at once: the earlier row wins.
    static let order: [Case] = [
        Case(name: "GET to a bad path", replace: [(":method", "GET"), (":path", "/x")], reason: .methodNotAllowed),
        Case(
            name: "bad token, duplicate topic", replace: [(":path", "/3/device/xyz")], add: [("apns-topic", "a")],
            reason: .badDeviceToken),
        Case(
            name: "duplicate, rejected token", add: [("apns-id", id)],
            authorization: .token(.rejected(.invalidProviderToken)), reason: .duplicateHeaders),
        Case(
            name: "rejected token, no topic", replace: [("apns-topic", nil)],
            authorization: .token(.rejected(.invalidProviderToken)), reason: .invalidProviderToken),
        Case(
            name: "bad topic, bad push type", replace: [("apns-topic", ""), ("apns-push-type", "x")], reason: .badTopic),
        Case(
            name: "bad push type, bad priority", replace: [("apns-push-type", "x"), ("apns-priority", "x")],
            reason: .invalidPushType),
        Case(
            name: "bad priority, bad expiration", replace: [("apns-priority", "x"), ("apns-expiration", "x")],
            reason: .badPriority),
        Case(
            name: "bad expiration, bad id", replace: [("apns-expiration", "x"), ("apns-id", "x")],
            reason: .badExpirationDate),
        Case(
            name: "bad id, long collapse id",
            replace: [("apns-id", "x"), ("apns-collapse-id", String(repeating: "c", count: 65))], reason: .badMessageId),
        Case(
            name: "long collapse id, empty body", replace: [("apns-collapse-id", String(repeating: "c", count: 65))],
            body: [], reason: .badCollapseId),
        Case(
            name: "empty background at 10", replace: [("apns-push-type", "background"), ("apns-priority", "10")],
            body: [], reason: .payloadEmpty),
        Case(
            name: "large voip to the bundle id", replace: [("apns-push-type", "voip")], body: body(6000),
            reason: .payloadTooLarge),
        Case(
            name: "background at 10 to the voip topic",
            replace: [
                ("apns-push-type", "background"), ("apns-priority", "10"), ("apns-topic", "com.example.app.voip"),
            ], reason: .badPriority),
    ]

    @Test(arguments: order)
    func theEarlierRowWins(_ row: Case) {
        #expect(
            row.outcome()
                == .rejected(
                    ProviderResponse(rejecting: row.reason!, apnsID: row.head().string(.apnsID).flatMap { APNsID($0) }))
        )
    }

    @Test func anAcceptedRequestCarriesTheResolvedValues() throws {
        let row = Case(
            name: "full",
            replace: [
                ("apns-topic", nil), ("apns-priority", "5"), ("apns-expiration", "0"), ("apns-collapse-id", "k"),
            ],
            authorization: .certificate(topics: ["com.solo.app"]))
        guard case .accepted(let request) = row.outcome() else {
            Issue.record("expected acceptance")
            return
        }
        #expect(request.deviceToken.hexString == Self.hex)
        #expect(request.topic == "com.solo.app")
        #expect(request.pushType == .alert)
        #expect(request.priority == .conservePower)
        #expect(request.expiration == .doNotStore)
        #expect(request.apnsID == APNsID(Self.id))
        #expect(request.collapseID == "k")
        #expect(request.payload.bytes == Self.payload)
        #expect(request.authorizationToken == nil)
    }

    @Test func aFailureEchoesAValidApnsIDAndOmitsAnInvalidOne() {
        let echoed = Case(name: "", body: []).outcome()
        #expect(echoed == .rejected(ProviderResponse(rejecting: .payloadEmpty, apnsID: APNsID(Self.id))))
        let invalid = Case(name: "", replace: [("apns-id", "nope")]).outcome()
        #expect(invalid == .rejected(ProviderResponse(status: 400, reason: .badMessageId)))
    }
}
