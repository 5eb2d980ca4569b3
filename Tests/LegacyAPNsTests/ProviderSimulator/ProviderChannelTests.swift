import APNsCore
import APNsCredentials
import APNsRuntime
import Foundation
import GatewaySimulator
import TestSupport
import Testing

/// The simulator's channel management and broadcast APIs judged by curl and nghttp, with Apple's
/// documented requests ("Sending channel management requests to APNs", "Sending broadcast push
/// notification requests to APNs") transcribed as they are written there, every channel and
/// broadcast reason provoked, and the store's rules (the limit, environments, policy 1).
@Suite(.serialized) struct ProviderChannelTests {
    static let bundle = "com.example.legacy"
    static let update = #"{"aps":{"event":"update","timestamp":1767225600,"content-state":{"score":"2-1"}}}"#

    static func withChannels<Result>(
        _ configure: (inout ProviderSimulator.Configuration) -> Void = { _ in },
        _ body: (ProviderFixture, Endpoint) async throws -> Result
    ) async throws -> Result {
        try await withProviderSimulator { configuration in
            configuration.managementPort = 0
            configure(&configuration)
        } _: { fixture in
            try await body(fixture, try #require(fixture.simulator.managementEndpoint))
        }
    }

    static func url(_ endpoint: Endpoint, _ path: String) -> String { "https://127.0.0.1:\(endpoint.port)\(path)" }

    /// One curl transfer with certificate auth: its output split into the `-w` fields after the body.
    static func curl(_ arguments: [String], write: String) throws -> (body: String, fields: [String], stderr: String) {
        let result = try Curl.run(Curl.universalPEM + arguments + ["-w", "\n" + write])
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        return (
            lines.dropLast().joined(separator: "\n"), (lines.last ?? "").split(separator: " ").map(String.init),
            result.stderr
        )
    }

    @Test func curlSendsApplesDocumentedChannelRequestsAndABroadcast() async throws {
        try await Self.withChannels { fixture, management in
            let channels = Self.url(management, "/1/apps/\(Self.bundle)/channels")
            // Create (Apple's example: a POST with the storage policy and push type, apns-request-id).
            let create = try Self.curl(
                [
                    "-X", "POST", "-H", "apns-request-id: 0309f14c-c6d8-4b7a-8e35-6e1fa4c40f00", "-d",
                    #"{"message-storage-policy": 1, "push-type": "LiveActivity"}"#, channels,
                ], write: "%{http_code} %header{apns-channel-id} %header{apns-request-id}")
            #expect(create.fields.count == 3 && create.fields[0] == "201", "\(create)")
            #expect(create.body.isEmpty)
            let id = try #require(ChannelID(create.fields[1]), "\(create)")
            #expect(create.fields[2] == "0309f14c-c6d8-4b7a-8e35-6e1fa4c40f00")

            // Read: the id in the apns-channel-id header, not the path; a request id made up.
            let read = try Self.curl(
                ["-H", "apns-channel-id: \(id)", channels], write: "%{http_code} %header{apns-request-id}")
            #expect(read.fields.first == "200" && APNsID(read.fields.last ?? "") != nil, "\(read)")
            #expect(read.body == #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)

            // List.
            let list = try Self.curl(
                [Self.url(management, "/1/apps/\(Self.bundle)/all-channels")], write: "%{http_code}")
            #expect(list.fields == ["200"] && list.body == #"{"channels":["\#(id)"]}"#, "\(list)")

            // A broadcast on the push port, with Apple's headers.
            let broadcast = try Self.curl(
                [
                    "-H", "apns-channel-id: \(id)", "-H", "apns-push-type: liveactivity", "-H",
                    "apns-expiration: 1900000000",
                    "-H", "apns-priority: 10", "-H", "apns-request-id: 1309f14c-c6d8-4b7a-8e35-6e1fa4c40f00", "-d",
                    Self.update,
                    Self.url(fixture.endpoint, "/4/broadcasts/apps/\(Self.bundle)"),
                ], write: "%{http_code} %header{apns-request-id} %header{apns-unique-id}")
            #expect(broadcast.fields.count == 3 && broadcast.fields[0] == "200", "\(broadcast)")
            #expect(broadcast.fields[1] == "1309f14c-c6d8-4b7a-8e35-6e1fa4c40f00" && APNsID(broadcast.fields[2]) != nil)
            let recorded = fixture.simulator.channels.broadcasts
            #expect(recorded.count == 1 && recorded.first?.request.channelID == id)
            #expect(recorded.first?.policy == .mostRecentMessageStored)
            #expect(recorded.first?.request.payload.string == Self.update)

            // Delete: 204, and the channel is gone for good.
            let delete = try Self.curl(
                ["-X", "DELETE", "-H", "apns-channel-id: \(id)", channels], write: "%{http_code}")
            #expect(delete.fields == ["204"] && delete.body.isEmpty, "\(delete)")
            let again = try Self.curl(["-H", "apns-channel-id: \(id)", channels], write: "%{http_code}")
            #expect(again.fields == ["400"] && again.body == #"{"reason":"ChannelNotRegistered"}"#)
            #expect(fixture.simulator.statistics.channelRequests == 4 && fixture.simulator.statistics.broadcasts == 1)
        }
    }

    @Test func theTokenAuthFlowWorksAndTheManagementPortServesNoPushes() async throws {
        try await Self.withChannels { fixture, management in
            let token = try ProviderFixture.pyJWTToken()
            let result = try Curl.run(
                [
                    "-H", "authorization: bearer \(token)", "-d",
                    #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#,
                    "-o", "/dev/null", "-w", "%{http_code} %header{apns-channel-id}",
                    Self.url(management, "/1/apps/com.any.app/channels"),
                ])
            #expect(result.output.hasPrefix("201 "), "\(result.output) \(result.stderr)")
            let push = try Curl.run(
                Curl.universalPEM + ProviderIndependentClientTests.topic + [
                    "-d", #"{"aps":{}}"#, "-w", " %{http_code}",
                    Self.url(management, "/3/device/" + ProviderFixture.hex),
                ])
            #expect(push.output == #"{"reason":"BadPath"} 404"#)
            #expect(fixture.recorder.accepted.isEmpty)
        }
    }

    // MARK: - Every channel and broadcast reason

    /// The reasons and how curl provokes each (on `id`, a channel of policy 0).
    static func provocation(_ reason: ProviderReason, id: ChannelID, fixture: ProviderFixture, management: Endpoint)
        -> [String]
    {
        let channels = url(management, "/1/apps/\(bundle)/channels")
        let broadcasts = url(fixture.endpoint, "/4/broadcasts/apps/\(bundle)")
        let good = ["-H", "apns-channel-id: \(id)", "-H", "apns-push-type: liveactivity", "-H", "apns-priority: 10"]
        /// A broadcast with Apple's headers, `replacing` some of them (curl sends a repeated -H twice).
        func broadcast(_ replacing: [String: String] = [:], expiration: String = "0", body: String = update) -> [String]
        {
            var headers = ["apns-channel-id": "\(id)", "apns-push-type": "liveactivity", "apns-priority": "10"]
            headers["apns-expiration"] = expiration
            headers.merge(replacing) { $1 }
            return headers.sorted { $0.key < $1.key }.flatMap { ["-H", "\($0.key): \($0.value)"] } + [
                "-d", body, broadcasts,
            ]
        }
        switch reason {
        case .featureNotEnabled: return [url(management, "/1/apps/com.example.legacy.voip/all-channels")]
        case .missingChannelId: return [channels]
        case .badChannelId: return ["-H", "apns-channel-id: ***", channels]
        case .channelNotRegistered: return ["-X", "DELETE", "-H", "apns-channel-id: YWJjZA==", channels]
        case .badRequestParams:
            return ["-d", #"{"message-storage-policy":1,"push-type":"LiveActivity","x":1}"#, channels]
        case .badRequestPayload: return ["-d", "{message-storage-policy", channels]
        case .missingPushType: return ["-d", #"{"message-storage-policy":1}"#, channels]
        case .cannotCreateChannelConfig:
            return ["-d", #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#, channels]
        case .topicMismatch: return [url(management, "/1/apps/com.other.app/all-channels")]
        case .invalidPushType: return broadcast(["apns-push-type": "alert"])
        case .badExpirationDate: return broadcast(expiration: "1900000000")
        case .topicDisallowed:
            return good + ["-H", "apns-expiration: 0", "-d", update, broadcasts + ".push-type.liveactivity"]
        case .badPriority: return broadcast(["apns-priority": "7"])
        case .payloadEmpty: return good + ["-H", "apns-expiration: 0", "-X", "POST", broadcasts]
        case .badMessageId: return broadcast(["apns-request-id": "nine"])
        case .badPath: return [url(management, "/1/apps/\(bundle)/channels/\(id)")]
        case .methodNotAllowed: return ["-X", "PUT", channels]
        case .payloadTooLarge: return broadcast(body: String(repeating: " ", count: 5121))
        default: return []
        }
    }

    static let broadcastReasons: [ProviderReason] = [
        .invalidPushType, .badExpirationDate, .topicDisallowed, .badPriority, .payloadEmpty, .badMessageId, .badPath,
        .methodNotAllowed, .payloadTooLarge,
    ]

    @Test func everyChannelAndBroadcastReasonIsProvokedByCurl() async throws {
        let store = ChannelStore(maximumChannelsPerApp: 1)
        try await Self.withChannels { configuration in
            configuration.channels = store
            configuration.broadcastDisabledBundles = ["com.example.legacy.voip"]
        } _: { fixture, management in
            let id = try #require(
                store.create(bundleID: Self.bundle, policy: .noMessageStored, environment: .development))
            for reason in ProviderReason.channelReasons + Self.broadcastReasons {
                let arguments = Self.provocation(reason, id: id, fixture: fixture, management: management)
                let answer = try Self.curl(arguments, write: "%{http_code} %header{apns-request-id} %header{apns-id}")
                let decoded = try? ProviderResponse.decodeBody(Array(answer.body.utf8)).get()
                #expect(answer.fields.first == reason.status.map(String.init), "\(reason): \(answer)")
                #expect(decoded?.reason == reason, "\(reason): \(answer)")
                // These answers carry apns-request-id, not apns-id.
                #expect(answer.fields.count == 2 && APNsID(answer.fields[1]) != nil, "\(reason): \(answer)")
            }
            let rejected = fixture.simulator.statistics.rejected
            #expect(Set(rejected.keys) == Set(ProviderReason.channelReasons + Self.broadcastReasons))
            #expect(fixture.simulator.statistics.summary.contains("CannotCreateChannelConfig 1"))
        }
    }

    /// 429, 500 and 503 (which Apple's channel article spells `Service Unavailable`) on demand, for
    /// valid requests only.
    @Test(arguments: [ProviderReason.tooManyRequests, .internalServerError, .serviceUnavailableSpaced])
    func channelFaultsAnswerTheServerSideReasons(_ reason: ProviderReason) async throws {
        try await Self.withChannels { configuration in
            configuration.faults.channelFailEvery = .init(count: 2, reason: reason)
        } _: { _, management in
            let list = Self.url(management, "/1/apps/\(Self.bundle)/all-channels")
            let first = try Self.curl([list], write: "%{http_code}")
            let second = try Self.curl([list], write: "%{http_code}")
            let invalid = try Self.curl(["-X", "PUT", list], write: "%{http_code}")
            #expect(first.fields == ["200"])
            #expect(second.fields == [reason.status.map(String.init) ?? "?"], "\(second)")
            #expect(second.body == #"{"reason":"\#(reason.rawValue)"}"#)
            #expect(invalid.fields == ["405"])
        }
    }

    // MARK: - nghttp

    @Test func nghttpCreatesListsAndBroadcasts() async throws {
        guard let nghttp = ExternalProgram.nghttp.locate() else { return }
        try await Self.withChannels { fixture, management in
            let token = try ProviderFixture.pyJWTToken()
            func run(_ arguments: [String], stdin: String = "") throws -> String {
                try CLIRunner.runProcess(
                    nghttp, ["-v", "-t", "20", "-H", "authorization: bearer \(token)"] + arguments,
                    stdin: Array(stdin.utf8)
                ).output
            }
            let created = try run(
                ["-d", "-", "https://localhost:\(management.port)/1/apps/\(Self.bundle)/channels"],
                stdin: #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)
            #expect(created.contains(":status: 201"), "\(created)")
            let id = try #require(Self.store(fixture).first, "\(created)")
            #expect(created.contains("apns-channel-id: \(id)"))
            let listed = try run(["https://localhost:\(management.port)/1/apps/\(Self.bundle)/all-channels"])
            #expect(listed.contains(":status: 200") && listed.contains(#"{"channels":["\#(id)"]}"#), "\(listed)")
            let sent = try run(
                [
                    "-H", "apns-channel-id: \(id)", "-H", "apns-push-type: Liveactivity", "-H", "apns-priority: 5",
                    "-H",
                    "apns-expiration: 0", "-d", "-",
                    "https://localhost:\(fixture.endpoint.port)/4/broadcasts/apps/\(Self.bundle)",
                ], stdin: Self.update)
            #expect(sent.contains(":status: 200") && sent.contains("apns-request-id: "), "\(sent)")
            #expect(sent.contains("apns-unique-id: "))
            // Apple's text's spelling was accepted, and the log says which arrived.
            let notes = fixture.events.get().compactMap { event -> [String]? in
                if case .channelRequest(_, let request, _, _, let notes) = event, request.hasPrefix("POST /4/") {
                    return notes
                }
                return nil
            }
            #expect(notes.first?.contains("apns-push-type 'Liveactivity' (Apple's text)") == true, "\(notes)")
            #expect(
                fixture.simulator.channels.storedMessage(channel: id, bundleID: Self.bundle, environment: .development)
                    == nil)
        }
    }

    static func store(_ fixture: ProviderFixture) -> [ChannelID] {
        fixture.simulator.channels.channels(bundleID: bundle, environment: .development)
    }

    /// The sample host Apple's broadcast article uses, named in the log, and still served.
    @Test func theSampleBroadcastHostIsAcceptedAndLogged() async throws {
        try await Self.withChannels { fixture, _ in
            let id = try #require(
                fixture.simulator.channels.create(
                    bundleID: Self.bundle, policy: .mostRecentMessageStored, environment: .development))
            let answer = try Self.curl(
                [
                    "-H", "Host: api-broadcast.sandbox.push.apple.com", "-H", "apns-channel-id: \(id)", "-H",
                    "apns-push-type: liveactivity", "-H", "apns-priority: 10", "-H", "apns-expiration: 1900000000",
                    "-d",
                    Self.update, Self.url(fixture.endpoint, "/4/broadcasts/apps/\(Self.bundle)"),
                ], write: "%{http_code}")
            #expect(answer.fields == ["200"], "\(answer)")
            let stored = fixture.simulator.channels.storedMessage(
                channel: id, bundleID: Self.bundle, environment: .development)
            #expect(
                stored?.notes.contains("host api-broadcast.sandbox.push.apple.com (Apple's sample)") == true,
                "\(String(describing: stored))")
        }
    }

    // MARK: - The store's rules

    @Test func tenThousandChannelsPerAppAndEnvironmentAndPolicyOneKeepsTheLatest() throws {
        let store = ChannelStore()
        #expect(store.maximumChannelsPerApp == 10_000)
        var ids: [ChannelID] = []
        for _ in 0..<10_000 {
            ids.append(
                try #require(store.create(bundleID: "com.a", policy: .noMessageStored, environment: .development)))
        }
        #expect(Set(ids).count == 10_000)
        #expect(store.create(bundleID: "com.a", policy: .noMessageStored, environment: .development) == nil)
        #expect(store.create(bundleID: "com.a", policy: .noMessageStored, environment: .production) != nil)
        #expect(store.create(bundleID: "com.b", policy: .noMessageStored, environment: .development) != nil)
        #expect(store.channels(bundleID: "com.a", environment: .production).count == 1)
        #expect(store.policy(of: ids[0], bundleID: "com.a", environment: .production) == nil)
        // Deleting frees a place; the id is never valid again.
        #expect(store.delete(ids[0], bundleID: "com.a", environment: .development))
        #expect(!store.delete(ids[0], bundleID: "com.a", environment: .development))
        let newer = try #require(
            store.create(bundleID: "com.a", policy: .mostRecentMessageStored, environment: .development))
        #expect(newer != ids[0])

        for timestamp in [1, 2] {
            let payload = try Payload(json: #"{"aps":{"event":"update","timestamp":\#(timestamp),"content-state":{}}}"#)
            store.record(
                .init(
                    request: BroadcastRequest(bundleID: "com.a", channelID: newer, payload: payload),
                    policy: .mostRecentMessageStored, environment: .development,
                    requestID: APNsID(rawValue: UInt128(timestamp)),
                    uniqueID: nil, notes: []))
        }
        #expect(store.broadcasts.count == 2)
        let stored = store.storedMessage(channel: newer, bundleID: "com.a", environment: .development)
        #expect(stored?.request.payload.string.contains(#""timestamp":2"#) == true)
        #expect(store.storedMessage(channel: newer, bundleID: "com.a", environment: .production) == nil)
    }

    /// Apps without end cannot make the store grow without end.
    @Test func theStoreHoldsABoundedNumberOfChannelsInAll() throws {
        let store = ChannelStore(maximumChannelsPerApp: 2, maximumChannels: 3)
        #expect(store.maximumChannels == 3)
        let ids = try (0..<3).map { index in
            try #require(store.create(bundleID: "com.app\(index)", policy: .noMessageStored, environment: .development))
        }
        #expect(store.create(bundleID: "com.app9", policy: .noMessageStored, environment: .development) == nil)
        #expect(store.delete(ids[1], bundleID: "com.app1", environment: .development))
        #expect(store.create(bundleID: "com.app9", policy: .noMessageStored, environment: .development) != nil)
    }

    /// One store shared by a production and a development simulator: each sees its own channels.
    @Test func aChannelBelongsToOneEnvironment() async throws {
        let store = ChannelStore()
        try await Self.withChannels { configuration in
            configuration.channels = store
        } _: { development, devManagement in
            try await Self.withChannels { configuration in
                configuration.channels = store
                configuration.environment = .production
            } _: { production, prodManagement in
                let created = try Self.curl(
                    [
                        "-d", #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#,
                        Self.url(devManagement, "/1/apps/\(Self.bundle)/channels"),
                    ],
                    write: "%{http_code} %header{apns-channel-id}")
                #expect(created.fields.first == "201")
                let id = try #require(created.fields.last)
                let elsewhere = try Self.curl(
                    ["-H", "apns-channel-id: \(id)", Self.url(prodManagement, "/1/apps/\(Self.bundle)/channels")],
                    write: "%{http_code}")
                #expect(elsewhere.fields == ["400"] && elsewhere.body.contains("ChannelNotRegistered"), "\(elsewhere)")
                #expect(store.channels(bundleID: Self.bundle, environment: .production).isEmpty)
                _ = (development, production)
            }
        }
    }
}
