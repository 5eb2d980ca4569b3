import APNsCore
import Testing

/// Every row of the channel and broadcast validator's table, Apple's documented requests, and the
/// forms Apple contradicts itself about.
@Suite struct ChannelRequestValidatorTests {
    static let known = ChannelID("dHN0LXU2Cg==")!
    static let noStorage = ChannelID("bm8tc3RvcmFnZQ==")!
    static let update = Array(#"{"aps":{"event":"update","timestamp":1,"content-state":{"a":1}}}"#.utf8)
    static let createBody = Array(#"{"message-storage-policy":1,"push-type":"LiveActivity"}"#.utf8)

    static let lookup = ChannelRequestValidator.ChannelLookup(
        policy: { bundle, id in
            guard bundle == "com.example.app" else { return nil }
            if id == known { return .mostRecentMessageStored }
            if id == noStorage { return .noMessageStored }
            return nil
        }, isEnabled: { $0 != "com.example.disabled" })

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var fields: [(String, String)]
        var body: [UInt8] = []
        var authorization = ProviderAuthorization.token(.accepted(topics: nil))
        var reason: ProviderReason?
        var testDescription: String { name }

        func outcome() -> ChannelRequestValidator.Outcome {
            var head = ProviderRequestHead()
            for (name, value) in fields { head.add(name: name, value: value) }
            return ChannelRequestValidator.validate(
                head, body: body, authorization: authorization, lookup: ChannelRequestValidatorTests.lookup)
        }
    }

    static func management(
        _ method: String, _ path: String = "/1/apps/com.example.app/channels", _ extra: [(String, String)] = []
    )
        -> [(String, String)]
    {
        [
            (":method", method), (":scheme", "https"), (":path", path),
            (":authority", "api-manage-broadcast.sandbox.push.apple.com"),
        ]
            + extra
    }

    static func broadcast(_ extra: [(String, String)], without: [String] = []) -> [(String, String)] {
        let base: [(String, String)] = [
            (":method", "POST"), (":scheme", "https"), (":path", "/4/broadcasts/apps/com.example.app"),
            (":authority", "api.sandbox.push.apple.com"), ("apns-channel-id", known.rawValue),
            ("apns-push-type", "liveactivity"), ("apns-priority", "10"), ("apns-expiration", "1900000000"),
        ]
        var fields = base.filter { field in !without.contains(field.0) && !extra.contains { $0.0 == field.0 } }
        fields += extra
        return fields
    }

    static let channelHeader = [("apns-channel-id", known.rawValue)]

    static let rows: [Case] = [
        // Apple's documented requests.
        Case(name: "create", fields: management("POST"), body: createBody),
        Case(name: "read", fields: management("GET", "/1/apps/com.example.app/channels", channelHeader)),
        Case(name: "delete", fields: management("DELETE", "/1/apps/com.example.app/channels", channelHeader)),
        Case(name: "list", fields: management("GET", "/1/apps/com.example.app/all-channels")),
        Case(name: "broadcast", fields: broadcast([]), body: update),
        // 1
        Case(
            name: "channel id in the path",
            fields: management("GET", "/1/apps/com.example.app/channels/" + known.rawValue), reason: .badPath),
        Case(name: "no bundle", fields: management("GET", "/1/apps//channels"), reason: .badPath),
        Case(name: "v3 path", fields: management("POST", "/3/apps/com.example.app/channels"), reason: .badPath),
        // 2
        Case(name: "PUT a channel", fields: management("PUT"), reason: .methodNotAllowed),
        Case(
            name: "POST all-channels", fields: management("POST", "/1/apps/com.example.app/all-channels"),
            reason: .methodNotAllowed),
        Case(name: "GET a broadcast", fields: broadcast([(":method", "GET")]), reason: .methodNotAllowed),
        // 3
        Case(
            name: "two channel ids",
            fields: management("GET", "/1/apps/com.example.app/channels", channelHeader + channelHeader),
            reason: .duplicateHeaders),
        // 4
        Case(
            name: "refused token", fields: management("GET", "/1/apps/com.example.app/all-channels"),
            authorization: .token(.rejected(.expiredProviderToken)), reason: .expiredProviderToken),
        // 5
        Case(
            name: "bad request id",
            fields: management("GET", "/1/apps/com.example.app/all-channels", [("apns-request-id", "seven")]),
            reason: .badMessageId),
        // 6
        Case(
            name: "certificate of another app", fields: management("GET", "/1/apps/com.example.app/all-channels"),
            authorization: .certificate(topics: ["com.other.app"]), reason: .topicMismatch),
        Case(
            name: "capital letters", fields: management("GET", "/1/apps/com.Example.app/all-channels"),
            authorization: .certificate(topics: ["com.example.app"]), reason: .topicMismatch),
        // 7
        Case(
            name: "not enabled", fields: management("GET", "/1/apps/com.example.disabled/all-channels"),
            reason: .featureNotEnabled),
        // 8
        Case(
            name: "suffix in the path",
            fields: broadcast([(":path", "/4/broadcasts/apps/com.example.app.push-type.liveactivity")]), body: update,
            reason: .topicDisallowed),
        Case(
            name: "suffix in apns-topic", fields: broadcast([("apns-topic", "com.example.app.push-type.liveactivity")]),
            body: update, reason: .topicDisallowed),
        // 9-11
        Case(name: "read without id", fields: management("GET"), reason: .missingChannelId),
        Case(
            name: "broadcast without id", fields: broadcast([], without: ["apns-channel-id"]), body: update,
            reason: .missingChannelId),
        Case(
            name: "id not base64",
            fields: management("DELETE", "/1/apps/com.example.app/channels", [("apns-channel-id", "no such id!")]),
            reason: .badChannelId),
        Case(
            name: "unknown id",
            fields: management("GET", "/1/apps/com.example.app/channels", [("apns-channel-id", "YWJjZA==")]),
            reason: .channelNotRegistered),
        // 12-16
        Case(
            name: "create, not JSON", fields: management("POST"), body: Array("{policy".utf8),
            reason: .badRequestPayload),
        Case(name: "create, empty", fields: management("POST"), reason: .badRequestPayload),
        Case(
            name: "create, unknown attribute", fields: management("POST"),
            body: Array(#"{"message-storage-policy":1,"push-type":"LiveActivity","ttl":9}"#.utf8),
            reason: .badRequestParams),
        Case(
            name: "create, no push type", fields: management("POST"),
            body: Array(#"{"message-storage-policy":1}"#.utf8), reason: .missingPushType),
        Case(
            name: "create, alert channel", fields: management("POST"),
            body: Array(#"{"message-storage-policy":1,"push-type":"alert"}"#.utf8), reason: .invalidPushType),
        Case(
            name: "create, policy 2", fields: management("POST"),
            body: Array(#"{"message-storage-policy":2,"push-type":"LiveActivity"}"#.utf8), reason: .badRequestParams),
        Case(
            name: "create, no policy", fields: management("POST"), body: Array(#"{"push-type":"LiveActivity"}"#.utf8),
            reason: .badRequestParams),
        Case(
            name: "create, body over 4 KB", fields: management("POST"), body: [UInt8](repeating: 0x20, count: 4097),
            reason: .payloadTooLarge),
        // 17-18
        Case(
            name: "no push type", fields: broadcast([], without: ["apns-push-type"]), body: update,
            reason: .missingPushType),
        Case(
            name: "alert push type", fields: broadcast([("apns-push-type", "alert")]), body: update,
            reason: .invalidPushType),
        // 19
        Case(
            name: "no priority", fields: broadcast([], without: ["apns-priority"]), body: update, reason: .badPriority),
        Case(name: "priority 7", fields: broadcast([("apns-priority", "7")]), body: update, reason: .badPriority),
        // 20
        Case(
            name: "no expiration", fields: broadcast([], without: ["apns-expiration"]), body: update,
            reason: .badExpirationDate),
        Case(
            name: "expiration tomorrow", fields: broadcast([("apns-expiration", "tomorrow")]), body: update,
            reason: .badExpirationDate),
        Case(
            name: "expiring on a no-storage channel", fields: broadcast([("apns-channel-id", noStorage.rawValue)]),
            body: update, reason: .badExpirationDate),
        Case(
            name: "expiration 0 on a no-storage channel",
            fields: broadcast([("apns-channel-id", noStorage.rawValue), ("apns-expiration", "0")]), body: update),
        // 21-23
        Case(name: "empty broadcast", fields: broadcast([]), reason: .payloadEmpty),
        Case(
            name: "broadcast over 5120", fields: broadcast([]), body: [UInt8](repeating: 0x20, count: 5121),
            reason: .payloadTooLarge),
        Case(
            name: "broadcast of a start", fields: broadcast([]),
            body: Array(
                #"{"aps":{"event":"start","timestamp":1,"content-state":{},"alert":"a","attributes-type":"T","attributes":{}}}"#
                    .utf8),
            reason: .invalidPushType),
    ]

    @Test(arguments: rows)
    func everyRowDecides(_ row: Case) {
        let outcome = row.outcome()
        switch outcome.result {
        case .success(let operation):
            #expect(row.reason == nil, "expected \(row.reason!), got \(operation)")
        case .failure(let refusal):
            #expect(refusal.reason == row.reason, "\(refusal.why)")
            #expect(refusal.reason.status != nil)
            #expect(!refusal.why.isEmpty)
        }
    }

    @Test func everyChannelReasonIsReachable() {
        let reached = Set(Self.rows.compactMap(\.reason))
        #expect(Set(ProviderReason.channelReasons).subtracting([.cannotCreateChannelConfig]).isSubset(of: reached))
        #expect(ProviderReason.topicMismatch.status == 403)
        #expect(ProviderReason.cannotCreateChannelConfig.status == 400)
        #expect(ProviderReason.serviceUnavailableSpaced.status == 503)
    }

    @Test func theOperationsCarryWhatTheRequestSaid() {
        let fields = Self.broadcast([
            ("apns-request-id", "123e4567-e89b-12d3-a456-4266554400a0"), ("apns-priority", "5"),
        ])
        let outcome = Case(name: "broadcast", fields: fields, body: Self.update).outcome()
        #expect(outcome.requestID == APNsID("123e4567-e89b-12d3-a456-4266554400a0"))
        guard case .success(.broadcast(let request, let policy)) = outcome.result else {
            Issue.record("\(outcome)")
            return
        }
        #expect(policy == .mostRecentMessageStored)
        #expect(request.channelID == Self.known && request.priority == .conservePower)
        #expect(request.expiration.rawValue == 1_900_000_000 && request.payload.bytes == Self.update)
        #expect(
            outcome.notes == [
                "apns-push-type 'liveactivity' (Apple's samples)",
                "host api.sandbox.push.apple.com (Apple's stated host)",
            ])
    }

    /// Apple's text says `Liveactivity`, its samples `liveactivity`; its sample host is
    /// api-broadcast.sandbox.push.apple.com: all accepted, each named.
    @Test func bothFormsOfApplesContradictionsAreAcceptedAndNamed() {
        let fields = Self.broadcast([
            ("apns-push-type", "Liveactivity"), (":authority", "api-broadcast.sandbox.push.apple.com:443"),
        ])
        let outcome = Case(name: "text and sample", fields: fields, body: Self.update).outcome()
        guard case .success(.broadcast(let request, _)) = outcome.result else {
            Issue.record("\(outcome)")
            return
        }
        #expect(request.pushType.rawValue == "Liveactivity")
        #expect(
            outcome.notes == [
                "apns-push-type 'Liveactivity' (Apple's text)",
                "host api-broadcast.sandbox.push.apple.com (Apple's sample)",
            ])
        let created = Case(
            name: "lowercase", fields: Self.management("POST"),
            body: Array(#"{"message-storage-policy":0,"push-type":"liveactivity"}"#.utf8)
        ).outcome()
        #expect(created.result == .success(.create(bundleID: "com.example.app", policy: .noMessageStored)))
        #expect(created.notes == ["push-type spelt 'liveactivity' (Apple writes LiveActivity)"])
    }
}
