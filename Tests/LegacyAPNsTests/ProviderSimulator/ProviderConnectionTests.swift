import APNsCore
import APNsCredentials
import APNsRuntime
import Foundation
import GatewaySimulator
import TestSupport
import Testing

/// The simulator's connection in memory: certificate auth, identifiers, every fault, recording.
@Suite struct ProviderConnectionTests {
    static let universal = ProviderConnection.Authentication.certificate(
        topics: ProviderPair.universalTopics, environment: .both)
    static let single = ProviderConnection.Authentication.certificate(
        topics: ["com.example.legacy"], environment: .development)

    @Test func aCertificateForTheOtherEnvironmentGetsForbiddenAndGoaway() throws {
        let pair = try ProviderPair(
            authentication: .certificate(topics: ["com.example.legacy"], environment: .production))
        try pair.exchange()
        #expect(pair.client.remoteMaxConcurrentStreams == 1000)
        let stream = try pair.submit(ProviderPair.request(1))
        try pair.exchange()
        #expect(pair.response(stream)?.status == 403)
        #expect(pair.response(stream)?.reason == .badCertificateEnvironment)
        #expect(
            pair.clientEvents.events.contains(
                .goaway(
                    lastStreamID: stream, .noError, debugData: Array(#"{"reason":"BadCertificateEnvironment"}"#.utf8))))
        #expect(pair.connection.isFinished)
    }

    @Test func aUniversalCertificateSuitsBothEnvironmentsAndOneWithoutMarkersIsBad() throws {
        for environment in ProviderSimulator.Environment.allCases {
            let pair = try ProviderPair(authentication: Self.universal, environment: environment)
            var untopical = ProviderPair.request(1)
            untopical.topic = nil
            #expect(try pair.send(untopical)?.reason == .missingTopic, "several topics need apns-topic")
            #expect(try pair.send(ProviderPair.request(2))?.status == 200, "\(environment)")
        }
        let unmarked = try ProviderPair(
            authentication: .certificate(topics: ["com.example.legacy"], environment: .unknown))
        let response = try unmarked.send(ProviderPair.request(1))
        #expect(response?.status == 403 && response?.reason == .badCertificate)
    }

    @Test func certificateTopicsDecideAndOneTopicNeedsNoHeader() throws {
        let pair = try ProviderPair(authentication: Self.universal)
        #expect(try pair.send(ProviderPair.request(1))?.status == 200)
        let voip = ProviderPair.request(2, topic: "com.example.legacy.voip", pushType: .voip)
        #expect(try pair.send(voip)?.status == 200)
        let other = try pair.send(ProviderPair.request(3, topic: "com.other.app"))
        #expect(other?.status == 400 && other?.reason == .topicDisallowed)

        let single = try ProviderPair(authentication: Self.single)
        var request = ProviderPair.request(4)
        request.topic = nil
        #expect(try single.send(request)?.status == 200)
        #expect(single.recorder.accepted.first?.request.topic == "com.example.legacy")
    }

    @Test func apnsIDIsEchoedOrMadeUpAndDevelopmentAddsAUniqueID() throws {
        let pair = try ProviderPair(authentication: Self.universal)
        let echoed = try pair.submit(ProviderPair.request(7))
        var anonymous = ProviderPair.request(8)
        anonymous.apnsID = nil
        let generated = try pair.submit(anonymous)
        try pair.exchange()
        #expect(pair.response(echoed)?.apnsID == APNsID(rawValue: 7))
        let made = try #require(pair.response(generated)?.apnsID)
        #expect(made != APNsID(rawValue: 8))
        #expect(pair.header("apns-unique-id", stream: echoed).flatMap { APNsID($0) } != nil)
        #expect(pair.recorder.accepted.map(\.apnsID) == [APNsID(rawValue: 7), made])

        let production = try ProviderPair(authentication: Self.universal, environment: .production)
        let stream = try production.submit(ProviderPair.request(9))
        try production.exchange()
        #expect(production.response(stream)?.status == 200)
        #expect(production.header("apns-unique-id", stream: stream) == nil)
    }

    static func token(_ index: Int) -> DeviceToken { ProviderPair.request(index).deviceToken }

    @Test func failingAndUnregisteredTokensGetTheirReasonsAndStatuses() throws {
        var faults = ProviderFaults()
        faults.failingTokens = [
            Self.token(1): .badDeviceToken, Self.token(2): .tooManyRequests, Self.token(3): .serviceUnavailable,
            Self.token(4): .expiredToken,
        ]
        faults.unregisteredTokens = [Self.token(5): .milliseconds(1_700_000_000_000), Self.token(6): .now]
        let pair = try ProviderPair(authentication: Self.universal, faults: faults)
        let expected: [(Int, Int, ProviderReason, UInt64?)] = [
            (1, 400, .badDeviceToken, nil), (2, 429, .tooManyRequests, nil), (3, 503, .serviceUnavailable, nil),
            (4, 410, .expiredToken, UInt64(pair.clock.now)), (5, 410, .unregistered, 1_700_000_000_000),
            (6, 410, .unregistered, UInt64(pair.clock.now)),
        ]
        for (index, status, reason, timestamp) in expected {
            let response = try pair.send(ProviderPair.request(index))
            #expect(response?.status == status && response?.reason == reason, "token \(index)")
            #expect(response?.timestamp == timestamp, "token \(index)")
            #expect(response?.apnsID == APNsID(rawValue: UInt128(index)))
        }
        #expect(try pair.send(ProviderPair.request(7))?.status == 200)
        #expect(pair.connection.rejectedCount == 6)
    }

    @Test func failEveryCountsValidRequests() throws {
        var faults = ProviderFaults()
        faults.failEvery = .init(count: 3, reason: .internalServerError)
        let pair = try ProviderPair(authentication: Self.universal, faults: faults)
        var statuses: [Int] = []
        for index in 1...7 { statuses.append(try pair.send(ProviderPair.request(index))?.status ?? 0) }
        #expect(statuses == [200, 200, 500, 200, 200, 500, 200])
    }

    @Test func goawayAfterNamesTheLastProcessedStreamAndLaterStreamsAreNotProcessed() throws {
        var faults = ProviderFaults()
        faults.goawayAfter = 3
        let pair = try ProviderPair(authentication: Self.universal, faults: faults)
        try pair.exchange()
        let streams = try (1...6).map { try pair.submit(ProviderPair.request($0)) }
        try pair.exchange()
        #expect(streams.prefix(3).map { pair.response($0)?.status } == [200, 200, 200])
        #expect(streams.suffix(3).allSatisfy { pair.response($0) == nil })
        let goaway = pair.clientEvents.events.compactMap { event -> Int32? in
            if case .goaway(let last, .noError, _) = event { return last }
            return nil
        }
        #expect(goaway == [streams[2]])
        let refused = pair.clientEvents.closedStreams.filter { $0.1 == .refusedStream }.map(\.0)
        #expect(Set(refused) == Set(streams.suffix(3)))
        #expect(pair.recorder.count == 3)
    }

    @Test func shutdownAfterAnswersServiceUnavailableShutdownAndSaysGoaway() throws {
        var faults = ProviderFaults()
        faults.shutdownAfter = 2
        let pair = try ProviderPair(authentication: Self.universal, faults: faults)
        #expect(try pair.send(ProviderPair.request(1))?.status == 200)
        #expect(try pair.send(ProviderPair.request(2))?.status == 200)
        let third = try pair.send(ProviderPair.request(3))
        #expect(third?.status == 503 && third?.reason == .shutdown)
        #expect(
            pair.clientEvents.events.contains(
                .goaway(lastStreamID: 5, .noError, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))))
    }

    @Test func resetAfterAsksForAResetWithTheNextRequestUnanswered() throws {
        var faults = ProviderFaults()
        faults.resetAfter = 1
        let pair = try ProviderPair(authentication: Self.universal, faults: faults)
        #expect(try pair.send(ProviderPair.request(1))?.status == 200)
        #expect(!pair.connection.resetRequested)
        #expect(try pair.send(ProviderPair.request(2)) == nil)
        #expect(pair.connection.resetRequested)
    }

    @Test func aStalledTokenIsNeverAnsweredWhileOthersAre() throws {
        var faults = ProviderFaults()
        faults.stallingTokens = [Self.token(1)]
        let pair = try ProviderPair(authentication: Self.universal, faults: faults)
        let stalled = try pair.submit(ProviderPair.request(1))
        let fine = try pair.submit(ProviderPair.request(2))
        try pair.exchange()
        try pair.advance(30)
        #expect(pair.response(stalled) == nil)
        #expect(pair.response(fine)?.status == 200)
        #expect(pair.events.get().contains(.stalled(connection: 1, stream: stalled)))
        #expect(pair.policy.statistics.stalled == 1)
    }

    @Test func errorDelayHoldsErrorsBackButNotSuccesses() throws {
        var faults = ProviderFaults()
        faults.errorDelay = .seconds(2)
        faults.failingTokens = [Self.token(1): .badDeviceToken]
        let pair = try ProviderPair(authentication: Self.universal, faults: faults)
        let bad = try pair.submit(ProviderPair.request(1))
        let good = try pair.submit(ProviderPair.request(2))
        try pair.exchange()
        #expect(pair.response(good)?.status == 200)
        #expect(pair.response(bad) == nil)
        #expect(pair.connection.nextDeadline! <= pair.now + 2)
        try pair.advance(1.5)
        #expect(pair.response(bad) == nil)
        try pair.advance(0.6)
        #expect(pair.response(bad)?.reason == .badDeviceToken)
    }

    /// What a stopping simulator (and an idle timeout) does to each connection: GOAWAY with the
    /// reason, streams already processed still answered, the connection then finished.
    @Test func aGoawayWithAReasonLetsProcessedStreamsFinish() throws {
        var faults = ProviderFaults()
        faults.stallingTokens = [Self.token(1)]
        let pair = try ProviderPair(authentication: Self.universal, faults: faults)
        let first = try pair.submit(ProviderPair.request(2))
        try pair.exchange()
        #expect(pair.response(first)?.status == 200)
        pair.connection.goaway(reason: .shutdown)
        try pair.exchange()
        #expect(
            pair.clientEvents.events.contains(
                .goaway(lastStreamID: first, .noError, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))))
        #expect(pair.connection.isFinished)
        #expect(pair.events.get().contains(.goaway(connection: 1, lastStreamID: first, reason: .shutdown)))
    }

    @Test func randomFaultsAreReproducibleFromTheSeed() throws {
        func run() throws -> [Int] {
            var faults = ProviderFaults()
            faults.random = .init(seed: 42, serviceUnavailable: 0.2, badDeviceToken: 0.2)
            let pair = try ProviderPair(authentication: Self.universal, faults: faults)
            return try (1...40).map { try pair.send(ProviderPair.request($0))?.status ?? 0 }
        }
        let first = try run()
        #expect(first == (try run()))
        #expect(Set(first) == [200, 400, 503])
    }

    @Test func acceptedRequestsAreRecordedInTheContractsJSONShape() throws {
        let pair = try ProviderPair(authentication: Self.universal)
        var request = ProviderPair.request(1, payload: Array(#"{"aps":{"alert":"h\u00e9\"llo"}}"#.utf8))
        request.priority = .conservePower
        request.expiration = Expiration(rawValue: 0)
        request.collapseID = "group-1"
        #expect(try pair.send(request)?.status == 200)
        let recorded = try #require(pair.recorder.accepted.first)
        var line: [UInt8] = []
        recorded.appendJSON(to: &line)
        let hex = request.deviceToken.hexString
        #expect(
            String(decoding: line, as: UTF8.self)
                == #"{"token":"\#(hex)","topic":"com.example.legacy","pushType":"alert","priority":5,"expiration":0,"collapseId":"group-1","apnsId":"00000000-0000-0000-0000-000000000001","payload":"{\"aps\":{\"alert\":\"h\\u00e9\\\"llo\"}}"}"#
        )
        var plain = ProviderPair.request(2)
        plain.pushType = nil
        #expect(try pair.send(plain)?.status == 200)
        var second: [UInt8] = []
        pair.recorder.accepted[1].appendJSON(to: &second)
        #expect(
            String(decoding: second, as: UTF8.self).contains(
                #""pushType":null,"priority":null,"expiration":null,"collapseId":null"#))
    }

    /// `--record`'s connections write each line as they accept (no `AcceptedRequest` made): the
    /// file holds exactly the lines `appendJSON` makes of what a memory recorder kept, for
    /// requests with every optional field absent or present, escapes, non-ASCII text and a
    /// payload at the size limit that is mostly quotes.
    @Test func theJSONLinesRecorderWritesWhatAppendJSONMakes() throws {
        var requests: [ProviderRequest] = []
        var full = ProviderPair.request(1, payload: Array(#"{"aps":{"alert":"h\u00e9\"llo \\ \n"}}"#.utf8))
        full.priority = .conservePower
        full.expiration = Expiration(rawValue: 4_294_967_295)
        full.collapseID = #"group "1" \ été"#
        requests.append(full)
        var plain = ProviderPair.request(2)
        plain.pushType = nil
        requests.append(plain)
        let quotes = String(repeating: #"\""#, count: 2000)
        requests.append(ProviderPair.request(3, payload: Array(#"{"aps":{},"q":"\#(quotes)"}"#.utf8)))
        requests.append(ProviderPair.request(4, payload: Array(#"{"aps":{"alert":"😀 ü"}}"#.utf8)))

        let scratch = try ScratchDirectory()
        let path = scratch.file("record.jsonl")
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        let lines = try ProviderPair(
            authentication: Self.universal, lineRecorder: JSONLinesProviderRecorder(fileDescriptor: descriptor))
        let memory = try ProviderPair(authentication: Self.universal)
        for request in requests {
            #expect(try lines.send(request)?.status == 200)
            #expect(try memory.send(request)?.status == 200)
        }
        var expected: [UInt8] = []
        for accepted in memory.recorder.accepted {
            accepted.appendJSON(to: &expected)
            expected.append(0x0A)
        }
        #expect(memory.recorder.count == requests.count)
        #expect(lines.recorder.count == 0)
        let written = try #require(scratch.read("record.jsonl"))
        #expect(written == expected)
        #expect(
            String(decoding: written, as: UTF8.self).contains(
                #""expiration":4294967295,"collapseId":"group \"1\" \\ été""#))
    }

    @Test func theStatisticsCountPerReasonAndSayItInTheSummary() throws {
        var faults = ProviderFaults()
        faults.failingTokens = [Self.token(1): .badDeviceToken, Self.token(2): .unregistered]
        let pair = try ProviderPair(authentication: Self.universal, faults: faults)
        for index in [1, 1, 2, 3] { _ = try pair.send(ProviderPair.request(index)) }
        var statistics = pair.policy.statistics
        #expect(statistics.accepted == 1)
        #expect(statistics.rejected == [.badDeviceToken: 2, .unregistered: 1])
        statistics.connections = 1
        #expect(statistics.summary == "1 connection, 1 accepted, 3 rejected (BadDeviceToken 2, Unregistered 1)")
    }
}

/// The provider-server fuzz corpus is not only noise: its seeds reach the request path.
@Suite struct ProviderFuzzCorpusTests {
    @Test func theSeedRequestsAreAnswered() throws {
        let seed = Fixtures.bytes(Fixtures.root + "/fuzz/provider-server/certificate-two-requests")
        let policy = ProviderPolicy()
        let connection = try ProviderConnection(
            policy: policy, number: 1, authentication: .certificate(topics: ["com.example.app"], environment: .both),
            now: 0)
        try seed.withUnsafeBytes { try connection.receive(UnsafeRawBufferPointer(rebasing: $0.dropFirst()), now: 0) }
        #expect(connection.completedRequests == 2)
        #expect(connection.acceptedCount == 2)
        #expect(policy.statistics.accepted == 0)  // handed over at the next tick
        connection.finish()
        #expect(policy.statistics.accepted == 2)
    }
}
