import APNsRuntime
import FeedbackClient
import GatewaySimulator
import LegacyAPNs
import TestSupport
import Testing

/// Issue #14 and #13: a peer that is not a feedback service is recognised after seconds, and a
/// service that trickles tuples cannot hold a read forever.
@Suite struct FeedbackTimeLimitTests {
    @Test func aGatewayPortIsRecognisedAsNotAFeedbackService() async throws {
        try await withTestGateway { gateway in
            let reader = try FeedbackSamples.reader(FeedbackService(gateway.endpoints.gateway)) {
                $0.firstByteTimeout = .milliseconds(300)
                $0.idleTimeout = .seconds(60)
            }
            let start = Monotonic.now()
            let result = await reader.read()
            // Long before the idle timeout (generous: a loaded machine is slow to connect).
            #expect(Monotonic.now() - start < 45)
            let failure = try #require(result.failure)
            #expect(failure.code == .protocolRefused)
            #expect(failure.timeLimit == .firstByte)
            #expect(failure.stopsSending)
            #expect(
                failure.reason
                    == "\(gateway.endpoints.gateway) sent nothing and kept the connection open for 0.3 s: the feedback "
                    + "service sends its list and closes at once; is this a gateway port (2195) or another service?")
            #expect(result.records.isEmpty)
        }
    }

    @Test func anEmptyListClosedAtOnceIsNoProblem() async throws {
        let server = try RawFeedbackServer(bytes: [])
        defer { server.stop() }
        let result = await (try FeedbackSamples.reader(server.service) { $0.firstByteTimeout = .milliseconds(300) })
            .read()
        #expect(result.failure == nil)
        #expect(result.records.isEmpty)
    }

    @Test func aServiceThatSendsItsListIsNotCutOffByTheFirstByteTimeout() async throws {
        try await withTestGateway(feedback: FeedbackSamples.records(3)) { gateway in
            let result = await
                (try FeedbackSamples.reader(gateway.feedbackService) {
                    $0.firstByteTimeout = .milliseconds(300)
                }).read()
            #expect(result.failure == nil)
            #expect(result.records == FeedbackSamples.records(3))
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aTrickleEndsAtTheReadDeadlineWithEveryTupleSoFar() async throws {
        let records = FeedbackSamples.records(100)
        let server = try RawFeedbackServer(bytes: FeedbackSamples.encode(records), chunkSize: 38, pause: 0.05)
        defer { server.stop() }
        let reader = try FeedbackSamples.reader(server.service) {
            $0.readDeadline = .milliseconds(800)
            $0.idleTimeout = .seconds(10)
        }
        let result = await reader.read()
        let failure = try #require(result.failure)
        #expect(failure.code == .timedOut)
        #expect(failure.timeLimit == .readDeadline)
        #expect(
            failure.reason.hasPrefix(
                "the feedback service at \(server.endpoint) was still sending after 0.8 s, the deadline for one read: "
                    + "stopped after "))
        #expect(!result.records.isEmpty)
        #expect(result.records.count < records.count)
        #expect(result.records == Array(records.prefix(result.records.count)))
    }

    @Test func thePollerStopsAtAPeerThatIsNotAFeedbackService() async throws {
        try await withTestGateway { gateway in
            let reader = try FeedbackSamples.reader(FeedbackService(gateway.endpoints.gateway)) {
                $0.firstByteTimeout = .milliseconds(200)
            }
            let poller = FeedbackPoller(reader: reader, interval: .seconds(1))
            let error = await #expect(throws: LegacyAPNsError.self) {
                for try await _ in poller {}
            }
            #expect(error?.code == .protocolRefused)
        }
    }
}
