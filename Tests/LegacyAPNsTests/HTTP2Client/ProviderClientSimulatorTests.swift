import APNsCore
import APNsCredentials
import APNsRuntime
import Foundation
import GatewaySimulator
import HTTP2Client
import TestSupport
import Testing

/// ``ProviderClient`` judged against the in-process ``ProviderSimulator`` (what `serve --http2`
/// runs) over real TLS on loopback, with every fault the simulator has, by token auth (the
/// fixture `.p8`) and certificate auth (the universal `.p12`). Each test checks the books: every
/// notification in exactly one bucket, every accepted one recorded by the simulator exactly once
/// unless the report names it a possible duplicate, nothing recorded that the report calls
/// rejected or not sent, every reason surfaced.
@Suite struct ProviderClientSimulatorTests {
    enum Auth: String, CaseIterable, CustomTestStringConvertible {
        case token, certificate
        var testDescription: String { rawValue }
    }

    static let key = try! SigningKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("AuthKey_ABC123DEFG.p8")))
    static let otherKey = try! SigningKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("AuthKey_ZYX987WVUT.p8")))

    /// A device token carrying `index` in its last 8 bytes.
    static func token(_ index: Int) -> DeviceToken {
        var bytes = [UInt8](repeating: 0x5A, count: 32)
        withUnsafeBytes(of: UInt64(index).bigEndian) { bytes.replaceSubrange(24..<32, with: $0) }
        return try! DeviceToken(bytes: bytes)
    }

    static func index(of token: DeviceToken) -> Int {
        token.withUnsafeBytes { Int(UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 24, as: UInt64.self))) }
    }

    static func request(_ index: Int) -> ProviderRequest {
        try! ProviderRequest(
            deviceToken: token(index), payload: Payload(unvalidatedBytes: Array(#"{"aps":{"alert":"\#(index)"}}"#.utf8))
        )
    }

    static func configuration(
        _ endpoint: Endpoint, auth: Auth, clock: (any ProviderClock)? = nil, key: SigningKey = key,
        keyID: String = "ABC123DEFG"
    ) -> ProviderClient.Configuration {
        let credentials: ProviderCredentials =
            switch auth {
            case .token: .token(key, keyID: keyID, teamID: ProviderFixture.teamID)
            case .certificate: .certificate(TestGateway.clientIdentity)
            }
        var configuration = ProviderClient.Configuration(server: .custom(endpoint), credentials: credentials)
        configuration.trust = .certificates(TestGateway.ca)
        if auth == .token { configuration.topic = "com.example.app" }
        configuration.delivery.reconnect = ReconnectPolicy(
            initialDelay: .milliseconds(10), maximumConsecutiveFailures: 4)
        configuration.delivery.retryDelay = Backoff(
            initialDelay: .milliseconds(20), multiplier: 2, maximumDelay: .milliseconds(200))
        if let clock { configuration.clock = clock }
        return configuration
    }

    /// What one send left behind, on both sides.
    struct Outcome {
        var report: ProviderSendReport
        var events: [ProviderEvent]
        var recorded: [AcceptedRequest]
        var simulatorEvents: [ProviderSimulatorEvent]
        var statistics: ProviderSimulator.Statistics

        /// How often the simulator accepted each notification.
        var recordedCounts: [Int: Int] {
            recorded.reduce(into: [:]) {
                $0[ProviderClientSimulatorTests.index(of: $1.request.deviceToken), default: 0] += 1
            }
        }

        var rejectedByIndex: [Int: ProviderRejection] {
            Dictionary(
                uniqueKeysWithValues: report.rejected.map { (ProviderClientSimulatorTests.index(of: $0.token), $0) })
        }

        /// Simulator rejections per notification (each attempt APNs refused).
        func simulatorRejections(of index: Int) -> [ProviderResponse] {
            simulatorEvents.compactMap {
                if case .rejected(_, _, let response, let token?, _) = $0,
                    ProviderClientSimulatorTests.index(of: token) == index
                {
                    return response
                }
                return nil
            }
        }
    }

    /// Sends `1...count` through a simulator configured by `configure` and returns both sides'
    /// records (read after the simulator stopped, so every accepted request is recorded).
    static func send(
        _ count: Int, auth: Auth, connections: Int = 1,
        configure: (inout ProviderSimulator.Configuration) -> Void = { _ in },
        client configureClient: (inout ProviderClient.Configuration) -> Void = { _ in }
    ) async throws -> Outcome {
        let (report, events, recorder, simulatorEvents, statistics) = try await withProviderSimulator(
            configure: configure
        ) { fixture in
            var configuration = Self.configuration(fixture.endpoint, auth: auth)
            configuration.connections = connections
            configureClient(&configuration)
            let events = Locked<[ProviderEvent]>([])
            let client = try ProviderClient(configuration: configuration) { event in events.update { $0.append(event) }
            }
            let report = await client.send((1...count).map { Self.request($0) })
            return (report, events, fixture.recorder, fixture.events, fixture.simulator)
        }
        return Outcome(
            report: report, events: events.get(), recorded: recorder.accepted, simulatorEvents: simulatorEvents.get(),
            statistics: statistics.statistics)
    }

    /// The books of a send of `1...count`: one bucket each; the simulator's record agrees.
    static func checkBooks(_ outcome: Outcome, count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let report = outcome.report
        #expect(report.sent == count, sourceLocation: sourceLocation)
        #expect(
            report.accepted + report.rejected.count + report.unconfirmed.count == count, "\(report)",
            sourceLocation: sourceLocation)
        var buckets: [UInt64: [String]] = [:]
        var duplicates = Set<UInt64>()
        for event in outcome.events {
            switch event {
            case .accepted(_, let acceptance):
                buckets[acceptance.position, default: []].append("accepted")
                if acceptance.isPossibleDuplicate { duplicates.insert(acceptance.position) }
            case .rejected(_, let rejection): buckets[rejection.position, default: []].append("rejected")
            case .unconfirmed(_, let entry): buckets[entry.position, default: []].append("unconfirmed")
            default: break
            }
        }
        #expect(
            buckets.count == count, "verdict events for \(buckets.count) of \(count)", sourceLocation: sourceLocation)
        let twice = buckets.filter { $0.value.count != 1 }
        #expect(twice.isEmpty, "more than one verdict: \(twice)", sourceLocation: sourceLocation)
        #expect(Set(buckets.keys) == Set((1...count).map(UInt64.init)), sourceLocation: sourceLocation)
        #expect(
            buckets.values.filter { $0 == ["accepted"] }.count == report.accepted, sourceLocation: sourceLocation)

        let recorded = outcome.recordedCounts
        let possiblyDuplicated = Set(report.possiblyDuplicated.map(\.position))
        for position in 1...count {
            let verdict = buckets[UInt64(position)]?.first
            let times = recorded[position] ?? 0
            let named = duplicates.contains(UInt64(position)) || possiblyDuplicated.contains(UInt64(position))
            switch verdict {
            case "accepted":
                #expect(
                    times == 1 || (named && times >= 1), "#\(position) accepted, recorded \(times) times",
                    sourceLocation: sourceLocation)
            case "rejected":
                let mayHave = outcome.report.rejected.first { $0.position == UInt64(position) }?.mayHaveBeenDelivered
                #expect(
                    times == 0 || mayHave == true, "#\(position) rejected, recorded \(times) times",
                    sourceLocation: sourceLocation)
            default:
                let mayHave = outcome.report.unconfirmed.first { $0.position == UInt64(position) }?.mayHaveBeenDelivered
                #expect(
                    times == 0 || mayHave == true, "#\(position) not sent, recorded \(times) times",
                    sourceLocation: sourceLocation)
            }
        }
        #expect(recorded.count <= report.accepted + report.rejected.count + report.unknownFate.count)
        for rejection in report.rejected where !rejection.isLocal {
            #expect(rejection.reason != nil, "rejection of #\(rejection.position) without a reason")
        }
    }

    // MARK: - Faults

    @Test(arguments: Auth.allCases)
    func badDeviceTokensAreRejectedWithTheirReasonsAndTheRestAcceptedOnce(_ auth: Auth) async throws {
        let outcome = try await Self.send(60, auth: auth) { configuration in
            configuration.faults.failingTokens = [
                Self.token(7): .badDeviceToken, Self.token(19): .deviceTokenNotForTopic, Self.token(33): .badTopic,
                Self.token(48): ProviderReason(rawValue: "NobodyKnowsThisReason"),
            ]
        }
        Self.checkBooks(outcome, count: 60)
        let rejected = outcome.rejectedByIndex
        #expect(rejected.keys.sorted() == [7, 19, 33, 48])
        #expect(rejected[7]?.reason == .badDeviceToken)
        #expect(rejected[7]?.status == 400)
        #expect(rejected[19]?.reason == .deviceTokenNotForTopic)
        #expect(rejected[33]?.reason == .badTopic)
        #expect(rejected[48]?.reason?.rawValue == "NobodyKnowsThisReason")
        #expect(outcome.report.accepted == 56)
        #expect(outcome.report.retried == 0)
        #expect(outcome.simulatorRejections(of: 7).count == 1)  // never retried
    }

    @Test func aProviderTokenFromAnUnknownKeyStopsTheSendNamingTheReason() async throws {
        let outcome = try await Self.send(30, auth: .token) { configuration in
            configuration.authKeys = [ProviderPair.authKeys[0]]
        } client: { configuration in
            configuration.credentials = .token(Self.otherKey, keyID: "ZYX987WVUT", teamID: ProviderFixture.teamID)
        }
        Self.checkBooks(outcome, count: 30)
        #expect(outcome.report.accepted == 0)
        #expect(outcome.report.rejected.first?.reason == .invalidProviderToken)
        #expect(outcome.report.rejected.first?.status == 403)
        #expect(outcome.report.failure != nil)
        #expect(outcome.report.failure?.reason.contains("InvalidProviderToken") == true, "\(outcome.report)")
        #expect(outcome.recorded.isEmpty)
        // One stream before a valid token: the rest were never sent and are safe to send again.
        #expect(outcome.report.notSent.count == 29)
    }

    @Test(arguments: Auth.allCases)
    func unregisteredTokensAreRejectedWith410AndTheirTimestamp(_ auth: Auth) async throws {
        let clock = ProviderSimulator.ManualClock()
        let outcome = try await Self.send(40, auth: auth) { configuration in
            configuration.clock = .manual(clock)
            configuration.faults.unregisteredTokens = [Self.token(3): .milliseconds(1_700_000_000_123)]
            configuration.faults.failingTokens = [Self.token(30): .unregistered, Self.token(31): .expiredToken]
        } client: { configuration in
            configuration.clock = SteppedClock(clock)  // token auth: iat by the simulator's clock
        }
        Self.checkBooks(outcome, count: 40)
        let rejected = outcome.rejectedByIndex
        #expect(rejected[3]?.status == 410)
        #expect(rejected[3]?.reason == .unregistered)
        #expect(rejected[3]?.timestamp == 1_700_000_000_123)
        #expect(rejected[30]?.timestamp == UInt64(clock.now))
        #expect(rejected[31]?.status == 410)
        #expect(rejected[31]?.reason == .expiredToken)
        #expect(outcome.report.accepted == 37)
    }

    @Test(arguments: Auth.allCases)
    func aGoawayMidBurstLosesNothingAndDuplicatesNothing(_ auth: Auth) async throws {
        let outcome = try await Self.send(300, auth: auth) { configuration in
            configuration.faults.goawayAfter = 40
        }
        Self.checkBooks(outcome, count: 300)
        #expect(outcome.report.accepted == 300)
        #expect(outcome.report.possibleDuplicates == 0)
        #expect(outcome.recordedCounts.values.allSatisfy { $0 == 1 })
        #expect(outcome.report.connections >= 8)
        let goaways = outcome.events.filter { if case .goaway = $0 { return true } else { return false } }
        #expect(goaways.count >= 7)
    }

    /// A graceful GOAWAY (NO_ERROR, Shutdown) on a connection that got its answers costs no wait:
    /// the next connection opens at once (each GOAWAY used to cost the backoff's first step, 200 ms
    /// by default). The backoff here is an hour, so a send that waited even once would not finish.
    @Test(.timeLimit(.minutes(1)), arguments: Auth.allCases)
    func aGracefulGoawayAfterAnswersReconnectsAtOnce(_ auth: Auth) async throws {
        let outcome = try await Self.send(12, auth: auth) { configuration in
            configuration.faults.goawayAfter = 1
        } client: { configuration in
            configuration.delivery.reconnect = ReconnectPolicy(
                initialDelay: .seconds(3600), maximumDelay: .seconds(3600), maximumConsecutiveFailures: 4)
        }
        Self.checkBooks(outcome, count: 12)
        #expect(outcome.report.accepted == 12)
        #expect(outcome.report.connections >= 12)  // one a notification (and perhaps one finding nothing left)
        let failures = outcome.events.filter { if case .connectionFailed = $0 { return true } else { return false } }
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test func aShutdownAnswerAndItsGoawayAreRetriedElsewhere() async throws {
        let outcome = try await Self.send(120, auth: .certificate) { configuration in
            configuration.faults.shutdownAfter = 50
        }
        Self.checkBooks(outcome, count: 120)
        #expect(outcome.report.accepted == 120)
        #expect(outcome.report.retried >= 2)
        #expect(outcome.recordedCounts.values.allSatisfy { $0 == 1 })
        let reasons = outcome.events.compactMap { event -> ProviderReason? in
            if case .goaway(_, let goaway) = event { return goaway.reason }
            return nil
        }
        #expect(reasons.contains(.shutdown))
    }

    @Test(arguments: Auth.allCases)
    func aStalledStreamTimesOutIsResetAndEndsUnconfirmedWhileTheRestAreAccepted(_ auth: Auth) async throws {
        let outcome = try await Self.send(30, auth: auth) { configuration in
            configuration.faults.stallingTokens = [Self.token(5), Self.token(22)]
        } client: { configuration in
            configuration.delivery.requestTimeout = .milliseconds(400)
            configuration.delivery.maximumAttempts = 2
        }
        Self.checkBooks(outcome, count: 30)
        #expect(outcome.report.accepted == 28)
        let stalled = outcome.report.unconfirmed.map { Self.index(of: $0.request.deviceToken) }.sorted()
        #expect(stalled == [5, 22])
        #expect(outcome.report.unconfirmed.allSatisfy { $0.mayHaveBeenDelivered })
        #expect(outcome.report.unconfirmed.allSatisfy { !$0.why.isEmpty })
        // Two attempts each: the first timed out and was sent again.
        #expect(outcome.statistics.stalled == 4)
        #expect(outcome.report.failure == nil)
    }

    @Test(arguments: Auth.allCases)
    func resetConnectionsRetryInFlightRequestsAndNameEveryPossibleDuplicate(_ auth: Auth) async throws {
        let outcome = try await Self.send(200, auth: auth) { configuration in
            configuration.faults.resetAfter = 35
        } client: { configuration in
            configuration.delivery.maximumAttempts = 6
            configuration.delivery.maximumStreams = 10  // answers come back before each reset
        }
        Self.checkBooks(outcome, count: 200)
        #expect(outcome.statistics.resets >= 4)
        #expect(outcome.report.accepted + outcome.report.unknownFate.count == 200, "\(outcome.report)")
        #expect(outcome.report.failure == nil, "\(outcome.report)")
        #expect(outcome.report.retried >= 4)
        #expect(outcome.report.possibleDuplicates >= 1)
        #expect(outcome.report.connections >= 5, "\(outcome.report)")
    }

    @Test func aServerThatResetsEveryConnectionBeforeAnyAnswerIsGivenUpWithEveryFateUnknown() async throws {
        // Every connection is reset at its first request, before any answer leaves (the first
        // request goes alone: one stream until the server's SETTINGS). No connection makes
        // progress, so the reconnect budget runs out; what was sent has an unknown fate.
        let outcome = try await Self.send(200, auth: .certificate) { configuration in
            configuration.faults.resetAfter = 0
        }
        Self.checkBooks(outcome, count: 200)
        #expect(outcome.report.accepted == 0)
        #expect(outcome.report.unconfirmed.count == 200)
        #expect(!outcome.report.unknownFate.isEmpty)
        // The cause is named: each one's attempts ran out on lost connections, or the reconnect
        // budget did first and the send stopped (which of the two comes first is a race).
        #expect(outcome.report.unconfirmed.allSatisfy { $0.why.contains("closed the connection") })
        #expect((3...4).contains(outcome.report.connections), "\(outcome.report)")
        #expect(outcome.recorded.isEmpty)
    }

    @Test(arguments: Auth.allCases)
    func tooManyRequestsAndServerErrorsAreRetriedAfterADelayThenAcceptedOrRejected(_ auth: Auth) async throws {
        let outcome = try await Self.send(60, auth: auth) { configuration in
            configuration.faults.failingTokens = [
                Self.token(4): .tooManyRequests, Self.token(9): .serviceUnavailable,
                Self.token(15): .internalServerError,
            ]
            configuration.faults.failEvery = .init(count: 7, reason: .tooManyRequests)
            configuration.faults.errorDelay = .milliseconds(5)
        } client: { configuration in
            configuration.delivery.maximumAttempts = 3
        }
        Self.checkBooks(outcome, count: 60)
        let rejected = outcome.rejectedByIndex
        // Always refused: three attempts each, then rejected with the last answer.
        #expect(rejected[4]?.status == 429)
        #expect(rejected[4]?.reason == .tooManyRequests)
        #expect(rejected[9]?.status == 503)
        #expect(rejected[9]?.reason == .serviceUnavailable)
        #expect(rejected[15]?.status == 500)
        #expect(rejected[15]?.reason == .internalServerError)
        for index in [4, 9, 15] { #expect(outcome.simulatorRejections(of: index).count == 3, "#\(index)") }
        // Every 7th request refused once: sent again, and (almost all) accepted the next time.
        #expect(outcome.report.retried >= 8)
        let others = rejected.filter { ![4, 9, 15].contains($0.key) }
        #expect(others.values.allSatisfy { $0.reason == .tooManyRequests })
        #expect(outcome.report.accepted == 57 - others.count)
        #expect(outcome.report.accepted >= 50)
        #expect(outcome.report.unconfirmed.isEmpty)
    }

    @Test func withTokenAuthTheFirstRequestGoesAloneThenTheStreamLimitRises() async throws {
        let outcome = try await Self.send(200, auth: .token) { configuration in
            configuration.maximumConcurrentStreams = 8
        }
        Self.checkBooks(outcome, count: 200)
        #expect(outcome.report.accepted == 200)
        #expect(outcome.recordedCounts.values.allSatisfy { $0 == 1 })
        let beforeFirstAnswer = outcome.events.prefix { if case .accepted = $0 { return false } else { return true } }
        let sentBefore = beforeFirstAnswer.filter { if case .sent = $0 { return true } else { return false } }
        #expect(sentBefore.count == 1)
        let limits = outcome.events.compactMap { event -> Int? in
            if case .streamLimit(_, let limit) = event { return limit }
            return nil
        }
        #expect(limits.first == 1)
        #expect(limits.last == 8, "\(limits)")
        #expect(outcome.statistics.protocolErrors == 0)
        #expect(outcome.report.retried == 0)  // nothing refused: the client never exceeded a limit
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func randomFaultsOfEveryKindStillBalanceTheBooks(_ seed: UInt64) async throws {
        let outcome = try await Self.send(400, auth: seed == 2 ? .certificate : .token, connections: 2) {
            configuration in
            configuration.faults.random = .init(
                seed: seed, goaway: 0.02, reset: 0.01, serviceUnavailable: 0.04, stall: 0.005, badDeviceToken: 0.03)
        } client: { configuration in
            configuration.delivery.requestTimeout = .milliseconds(500)
            configuration.delivery.maximumAttempts = 4
            configuration.delivery.reconnect = ReconnectPolicy(
                initialDelay: .milliseconds(5), maximumConsecutiveFailures: 20)
        }
        Self.checkBooks(outcome, count: 400)
        #expect(outcome.report.failure == nil, "\(outcome.report)")
        #expect(outcome.report.rejected.allSatisfy { [.badDeviceToken, .serviceUnavailable].contains($0.reason) })
    }

    // MARK: - Token lifetimes under the injected clock

    /// A client clock driven by the simulator's ``ProviderSimulator/ManualClock``: wall time is the
    /// manual clock; monotonic time is the real one plus however far the manual clock moved.
    final class SteppedClock: ProviderClock {
        let manual: ProviderSimulator.ManualClock
        let start: Int64

        init(_ manual: ProviderSimulator.ManualClock) {
            self.manual = manual
            start = manual.now
        }

        func now() -> Duration { .seconds(Monotonic.now()) + .milliseconds(manual.now - start) }
        func unixTime() -> Int64 { manual.seconds }
    }

    /// Submits `range` on `stream` and waits (bounded) until each has its verdict event.
    static func submitAndSettle(_ range: ClosedRange<Int>, on stream: ProviderStream, events: Locked<[ProviderEvent]>)
        async throws
    {
        for index in range { _ = await stream.submit(request(index)) }
        // Looked at once more after the deadline: a busy test process may resume this task late.
        let deadline = Monotonic.now() + 20
        while true {
            let late = Monotonic.now() >= deadline
            let settled = events.get().filter {
                switch $0 {
                case .accepted, .rejected, .unconfirmed: true
                default: false
                }
            }.count
            if settled >= range.upperBound { return }
            if late { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        Issue.record("\(range) did not settle in time")
    }

    @Test func tokensAreRotatedAfterAboutFiftyMinutesOnTheSameConnectionAndNeverWithinTwenty() async throws {
        let clock = ProviderSimulator.ManualClock()
        let (report, events, simulatorEvents) = try await withProviderSimulator { configuration in
            configuration.clock = .manual(clock)
        } _: { fixture in
            let events = Locked<[ProviderEvent]>([])
            let client = try ProviderClient(
                configuration: Self.configuration(fixture.endpoint, auth: .token, clock: SteppedClock(clock))
            ) { event in events.update { $0.append(event) } }
            let stream = client.openStream()
            try await Self.submitAndSettle(1...10, on: stream, events: events)
            clock.advance(by: .seconds(15 * 60))  // 15 minutes: too soon to replace the token
            try await Self.submitAndSettle(11...20, on: stream, events: events)
            clock.advance(by: .seconds(40 * 60))  // 55 minutes: replaced
            try await Self.submitAndSettle(21...30, on: stream, events: events)
            clock.advance(by: .seconds(55 * 60))  // and again
            try await Self.submitAndSettle(31...40, on: stream, events: events)
            return (await stream.finish(), events.get(), fixture.events.get())
        }
        #expect(report.accepted == 40, "\(report)")
        #expect(report.rejected.isEmpty)
        #expect(report.connections == 1)
        let refreshes = events.filter { if case .tokenRefreshed = $0 { return true } else { return false } }
        #expect(refreshes.count == 3)  // the first token and two replacements
        let updated = simulatorEvents.filter { if case .tokenUpdated = $0 { return true } else { return false } }
        #expect(updated.count == 2)
        let refused = simulatorEvents.filter { if case .rejected = $0 { return true } else { return false } }
        #expect(refused.isEmpty, "\(refused)")
    }

    @Test func anExpiredProviderTokenGetsAFreshTokenAndOneRetryOnANewConnection() async throws {
        let clock = ProviderSimulator.ManualClock()
        let recorder = MemoryProviderRecorder()
        let (report, events, simulatorEvents) = try await withProviderSimulator { configuration in
            configuration.clock = .manual(clock)
            configuration.recorder = recorder
        } _: { fixture in
            let events = Locked<[ProviderEvent]>([])
            var configuration = Self.configuration(fixture.endpoint, auth: .token, clock: SteppedClock(clock))
            configuration.delivery.tokenRefreshAge = .seconds(3 * 3600)  // a client that forgets to rotate
            let client = try ProviderClient(configuration: configuration) { event in events.update { $0.append(event) }
            }
            let stream = client.openStream()
            try await Self.submitAndSettle(1...10, on: stream, events: events)
            clock.advance(by: .seconds(61 * 60))  // older than an hour: APNs refuses it
            try await Self.submitAndSettle(11...20, on: stream, events: events)
            return (await stream.finish(), events.get(), fixture.events.get())
        }
        #expect(report.accepted == 20, "\(report)")
        #expect(report.rejected.isEmpty)
        #expect(report.connections == 2)
        let expired = simulatorEvents.filter {
            if case .rejected(_, _, let response, _, _) = $0 { return response.reason == .expiredProviderToken }
            return false
        }
        #expect(expired.count >= 1)
        let accepted = simulatorEvents.filter { if case .tokenAccepted = $0 { return true } else { return false } }
        #expect(accepted.count == 2)
        let counts = recorder.accepted.reduce(into: [Int: Int]()) {
            $0[Self.index(of: $1.request.deviceToken), default: 0] += 1
        }
        #expect(counts.keys.sorted() == Array(1...20))
        #expect(counts.values.allSatisfy { $0 == 1 })
        #expect(events.contains { if case .retrying = $0 { return true } else { return false } })
    }

    @Test func pyJWTVerifiesEveryTokenTheClientSentAcrossRotations() async throws {
        let server = try HTTP2TestServer()
        defer { server.stop() }
        let clock = ProviderSimulator.ManualClock(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        let events = Locked<[ProviderEvent]>([])
        let client = try ProviderClient(
            configuration: Self.configuration(server.endpoint, auth: .token, clock: SteppedClock(clock))
        ) { event in events.update { $0.append(event) } }
        let stream = client.openStream()
        var issuedAt: [Int64] = []
        for batch in 0..<3 {
            if batch > 0 { clock.advance(by: .seconds(51 * 60)) }
            issuedAt.append(clock.seconds)
            for index in (batch * 5 + 1)...(batch * 5 + 5) { _ = await stream.submit(Self.request(index)) }
            // The next batch only after this one was answered (so its token is the one judged).
            let deadline = Monotonic.now() + 20
            while Monotonic.now() < deadline, stream.failure == nil {
                let accepted = events.get().filter { if case .accepted = $0 { return true } else { return false } }
                if accepted.count >= batch * 5 + 5 { break }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        let report = await stream.finish()
        #expect(report.accepted == 15, "\(report)")
        let tokens = server.finishedConnections(1).flatMap(\.requests).compactMap(\.authorizationToken)
        #expect(tokens.count == 15)
        let distinct = tokens.reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }
        #expect(distinct.count == 3)
        let verdict = try PythonTools.run(
            """
            import jwt, sys
            key = open(sys.argv[1]).read()
            for token in sys.argv[2:]:
                claims = jwt.decode(token, key, algorithms=["ES256"], options={"verify_iat": False})
                print(jwt.get_unverified_header(token)["kid"], claims["iss"], claims["iat"])
            """, arguments: [Fixtures.certs("AuthKey_ABC123DEFG.pub.pem")] + distinct)
        #expect(verdict.status == 0, "\(verdict.stderr)")
        let lines = verdict.output.split(separator: "\n").map(String.init)
        #expect(lines == issuedAt.map { "ABC123DEFG DEF123GHIJ \($0)" })
    }
}
