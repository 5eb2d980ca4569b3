import APNsCore
import APNsCredentials
import APNsRuntime
import Foundation
import GatewaySimulator
import HTTP2Client
import TestSupport
import Testing

/// ``ChannelClient``, ``BroadcastClient`` and Live Activity pushes through ``ProviderClient``,
/// judged against the in-process simulator over real TLS: the lifecycle of a channel, APNs's
/// refusals as values, a broadcast recorded with its channel and policy, the client's own checks
/// refusing before anything is sent, and start, update and end of a Live Activity.
@Suite struct ChannelClientTests {
    static let bundle = "com.example.legacy"
    static let key = ProviderClientSimulatorTests.key

    static func credentials(_ auth: ProviderClientSimulatorTests.Auth) -> ProviderCredentials {
        switch auth {
        case .token: .token(key, keyID: "ABC123DEFG", teamID: ProviderFixture.teamID)
        case .certificate: .certificate(TestGateway.clientIdentity)
        }
    }

    static func channels(_ endpoint: Endpoint, _ auth: ProviderClientSimulatorTests.Auth) throws -> ChannelClient {
        var configuration = ChannelClient.Configuration(server: .custom(endpoint), credentials: credentials(auth))
        configuration.trust = .certificates(TestGateway.ca)
        return try ChannelClient(configuration: configuration)
    }

    static func broadcasts(_ endpoint: Endpoint, _ auth: ProviderClientSimulatorTests.Auth) throws -> BroadcastClient {
        var configuration = BroadcastClient.Configuration(server: .custom(endpoint), credentials: credentials(auth))
        configuration.trust = .certificates(TestGateway.ca)
        return try BroadcastClient(configuration: configuration)
    }

    @Test(arguments: ProviderClientSimulatorTests.Auth.allCases)
    func aChannelsLifeOverOneConnection(_ auth: ProviderClientSimulatorTests.Auth) async throws {
        try await withProviderSimulator {
            $0.managementPort = 0
        } _: { fixture in
            let client = try Self.channels(try #require(fixture.simulator.managementEndpoint), auth)
            let requestID = APNsID("123e4567-e89b-12d3-a456-4266554400a0")!
            let kept = try await client.create(bundleID: Self.bundle, storagePolicy: .mostRecentMessageStored).get()
            let plain = try await client.create(bundleID: Self.bundle, storagePolicy: .noMessageStored).get()
            #expect(
                try await client.read(kept, bundleID: Self.bundle).get()
                    == ChannelConfiguration(storagePolicy: .mostRecentMessageStored))
            #expect(try await client.read(plain, bundleID: Self.bundle).get().storagePolicy == .noMessageStored)
            #expect(try await client.list(bundleID: Self.bundle).get() == [kept, plain])
            #expect(try await client.delete(plain, bundleID: Self.bundle, requestID: requestID).get() == requestID)
            #expect(try await client.list(bundleID: Self.bundle).get() == [kept])

            // Refusals are values carrying the reason and apns-request-id.
            guard case .failure(let gone) = try await client.read(plain, bundleID: Self.bundle) else {
                Issue.record("a deleted channel was read")
                return
            }
            #expect(gone.response.status == 400 && gone.response.reason == .channelNotRegistered)
            #expect(gone.response.requestID != nil && !gone.isLocal)
            if auth == .certificate {
                guard case .failure(let other) = try await client.list(bundleID: "com.other.app") else {
                    Issue.record("listed another app's channels")
                    return
                }
                #expect(other.response.status == 403 && other.response.reason == .topicMismatch)
            }
            await client.close()
            // One connection for all of it.
            #expect(fixture.simulator.statistics.connections == 1)
        }
    }

    /// Channel management and broadcasts tunnel through an HTTP proxy (tinyproxy, Basic auth), as
    /// `send --http2` does; `channels --proxy` is the same client.
    @Test func channelsAndBroadcastsGoThroughAProxy() async throws {
        try await withProviderSimulator { fixture in
            let tinyproxy = try Tinyproxy(allowedPort: fixture.endpoint.port, credentials: ("user", "s3cret"))
            let proxy = try ProviderProxy(url: "http://user:s3cret@\(tinyproxy.endpoint)")
            var channels = ChannelClient.Configuration(
                server: .custom(fixture.endpoint), credentials: Self.credentials(.token))
            channels.trust = .certificates(TestGateway.ca)
            channels.proxy = proxy
            let client = try ChannelClient(configuration: channels)
            let id = try await client.create(bundleID: Self.bundle, storagePolicy: .noMessageStored).get()
            await client.close()
            var broadcasts = BroadcastClient.Configuration(
                server: .custom(fixture.endpoint), credentials: Self.credentials(.token))
            broadcasts.trust = .certificates(TestGateway.ca)
            broadcasts.proxy = proxy
            let sender = try BroadcastClient(configuration: broadcasts)
            let payload = try Payload(json: #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#)
            let answer = try await sender.send(BroadcastRequest(bundleID: Self.bundle, channelID: id, payload: payload))
            await sender.close()
            #expect((try? answer.get())?.status == 200, "\(answer)")
            #expect(tinyproxy.tunnelled(to: fixture.endpoint.port), "\(tinyproxy.program.standardOutput)")
            #expect(fixture.simulator.channels.broadcasts.count == 1)
        }
    }

    /// A kept connection the server said GOAWAY on (idle) is replaced before the next request,
    /// which is answered on a new connection.
    @Test func aConnectionTheServerEndedMeanwhileIsReplaced() async throws {
        try await withProviderSimulator {
            $0.limits.idleTimeout = .milliseconds(200)
        } _: { fixture in
            let client = try Self.channels(fixture.endpoint, .certificate)
            let id = try await client.create(bundleID: Self.bundle, storagePolicy: .noMessageStored).get()
            // Bounded wait for the simulator's idle GOAWAY, which it logs as an event.
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline,
                !fixture.events.get().contains(where: { if case .goaway = $0 { true } else { false } })
            {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(try await client.read(id, bundleID: Self.bundle).get().storagePolicy == .noMessageStored)
            #expect(fixture.simulator.statistics.connections == 2)
            await client.close()
        }
    }

    @Test(arguments: ProviderClientSimulatorTests.Auth.allCases)
    func aBroadcastIsRecordedWithItsChannelAndPolicy(_ auth: ProviderClientSimulatorTests.Auth) async throws {
        try await withProviderSimulator { fixture in
            let channels = try Self.channels(fixture.endpoint, auth)
            let id = try await channels.create(bundleID: Self.bundle, storagePolicy: .mostRecentMessageStored).get()
            let sender = try Self.broadcasts(fixture.endpoint, auth)
            struct Score: Encodable {
                var home: Int
                var away: Int
            }
            for (minute, score) in [(60, Score(home: 1, away: 0)), (75, Score(home: 2, away: 0))] {
                let update = try LiveActivityPayload(event: .update, timestamp: Int64(minute), contentState: score)
                let request = BroadcastRequest(
                    bundleID: Self.bundle, channelID: id, payload: try update.build(forBroadcast: true),
                    priority: .conservePower, expiration: Expiration(rawValue: 1_900_000_000))
                let answer = try await sender.send(request).get()
                #expect(answer.status == 200 && answer.requestID != nil && answer.uniqueID != nil)
            }
            let stored = fixture.simulator.channels.storedMessage(
                channel: id, bundleID: Self.bundle, environment: .development)
            #expect(stored?.request.payload.string.contains(#""home":2"#) == true)
            #expect(stored?.policy == .mostRecentMessageStored && stored?.request.priority == .conservePower)
            #expect(stored?.notes.first == "apns-push-type 'liveactivity' (Apple's samples)")
            #expect(fixture.simulator.channels.broadcasts.count == 2)

            // The client refuses before sending what APNs would refuse.
            let start = try LiveActivityPayload.start(
                timestamp: 1, contentState: Score(home: 0, away: 0), alert: "Kick-off", attributesType: "Match",
                attributes: ["home": "A"] as [String: String])
            let refused = try await sender.send(
                BroadcastRequest(bundleID: Self.bundle, channelID: id, payload: try start.build()))
            guard case .failure(let local) = refused else {
                Issue.record("a broadcast started an activity")
                return
            }
            #expect(local.isLocal && local.localExplanation?.contains("cannot start") == true)
            // And APNs's own refusals come back as values.
            let plain = try await channels.create(bundleID: Self.bundle, storagePolicy: .noMessageStored).get()
            let update = try LiveActivityPayload(event: .update, timestamp: 1, contentState: Score(home: 0, away: 0))
            guard
                case .failure(let expiring) = try await sender.send(
                    BroadcastRequest(
                        bundleID: Self.bundle, channelID: plain, payload: try update.build(forBroadcast: true),
                        expiration: Expiration(rawValue: 1_900_000_000)))
            else {
                Issue.record("an expiring broadcast on a no-storage channel was accepted")
                return
            }
            #expect(expiring.response.reason == .badExpirationDate && !expiring.isLocal)
            #expect(fixture.simulator.channels.broadcasts.count == 2)
            await sender.close()
            await channels.close()
        }
    }

    /// A Live Activity started, updated and ended with the provider client (token auth, the
    /// topic's suffix, priority 10 then 5), and refused over a certificate before sending.
    @Test func aLiveActivityStartsUpdatesAndEnds() async throws {
        try await withProviderSimulator { fixture in
            struct State: Encodable { var progress: Double }
            var configuration = ProviderClientSimulatorTests.configuration(fixture.endpoint, auth: .token)
            configuration.topic = Self.bundle + ".push-type.liveactivity"
            let client = try ProviderClient(configuration: configuration)
            let token = ProviderClientSimulatorTests.token(1)
            var payloads: [Payload] = []
            payloads.append(
                try LiveActivityPayload.start(
                    timestamp: 100, contentState: State(progress: 0), alert: "Your order is being prepared",
                    attributesType: "DeliveryAttributes", attributes: ["order": "42"] as [String: String]
                ).build())
            payloads.append(
                try LiveActivityPayload(event: .update, timestamp: 200, contentState: State(progress: 0.5)).build())
            var end = try LiveActivityPayload(event: .end, timestamp: 300, contentState: State(progress: 1))
            end.dismissalDate = 0
            payloads.append(try end.build())
            let requests = try payloads.enumerated().map { index, payload in
                try ProviderRequest(
                    deviceToken: token, payload: payload, pushType: .liveActivity,
                    priority: index == 0 ? .immediate : .conservePower)
            }
            let report = await client.send(requests)
            await client.shutdown()
            #expect(report.accepted == 3, "\(report.rejected)")
            let recorded = fixture.recorder.accepted.map(\.request)
            #expect(recorded.map(\.payload) == payloads)
            #expect(
                recorded.allSatisfy {
                    $0.topic == Self.bundle + ".push-type.liveactivity" && $0.pushType == .liveActivity
                })

            var certificate = ProviderClientSimulatorTests.configuration(fixture.endpoint, auth: .certificate)
            certificate.topic = Self.bundle + ".push-type.liveactivity"
            let refusing = try ProviderClient(configuration: certificate)
            let refused = await refusing.send(requests[1])
            await refusing.shutdown()
            #expect(refused.rejected.first?.reason == .topicDisallowed && refused.rejected.first?.isLocal == true)
            #expect(fixture.recorder.accepted.count == 3)
        }
    }

    /// Over a certificate that names the Live Activity topic, the simulator answers the one reason
    /// it chose (Apple names none) and says why.
    @Test func theSimulatorRefusesATokenOnlyTypeOverACertificateAndSaysWhy() throws {
        let topic = Self.bundle + ".push-type.liveactivity"
        let pair = try ProviderPair(authentication: .certificate(topics: [topic], environment: .both))
        let payload = Array(#"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#.utf8)
        let response = try pair.send(ProviderPair.request(1, topic: topic, pushType: .liveActivity, payload: payload))
        #expect(response?.status == 400 && response?.reason == .topicDisallowed)
        let why = pair.events.get().compactMap { event -> String? in
            if case .rejected(_, _, _, _, let why) = event { return why }
            return nil
        }
        #expect(why.first?.contains("need token authentication") == true, "\(why)")
    }
}
