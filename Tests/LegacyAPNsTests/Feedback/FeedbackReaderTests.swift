import APNsRuntime
import FeedbackClient
import GatewaySimulator
import LegacyAPNs
import TestSupport
import Testing

/// The reader over real TLS on loopback, against the simulator's feedback port.
@Suite struct FeedbackReaderTests {
    @Test func emptyListClosesImmediately() async throws {
        try await withTestGateway { gateway in
            let result = try await FeedbackSamples.reader(gateway.feedbackService).read()
            #expect(result.failure == nil)
            #expect(result.records.isEmpty)
            #expect(result.byteCount == 0)
        }
    }

    @Test func readsThreeTuples() async throws {
        let records = FeedbackSamples.records(3)
        try await withTestGateway(feedback: records) { gateway in
            let result = try await FeedbackSamples.reader(gateway.feedbackService).read()
            #expect(result.failure == nil)
            #expect(result.records == records)
            #expect(result.byteCount == 3 * 38)
            #expect(try result.get() == records)
        }
    }

    /// 100,000 tuples, each TLS record only 7 bytes long, so nearly every tuple is split across
    /// records and reads. Measured: see the report; the bound below only catches a regression
    /// to quadratic time.
    @Test(.timeLimit(.minutes(1)))
    func readsAHundredThousandTuplesInSevenByteRecords() async throws {
        let records = FeedbackSamples.records(100_000)
        try await withTestGateway(feedback: records, configure: { $0.feedbackChunkSize = 7 }) { gateway in
            let clock = ContinuousClock()
            let start = clock.now
            let result = try await FeedbackSamples.reader(gateway.feedbackService).read()
            let elapsed = clock.now - start
            #expect(result.failure == nil)
            #expect(result.records.count == 100_000)
            #expect(result.records == records)
            #expect(result.byteCount == 3_800_000)
            #expect(elapsed < .seconds(30), "took \(elapsed)")
        }
    }

    @Test func edgeTimestampsRoundTripAsUnsigned() async throws {
        let records = [
            FeedbackSamples.record(1, timestamp: 0),
            FeedbackSamples.record(2, timestamp: 0xFFFF_FFFF),
            FeedbackSamples.record(3, timestamp: 0x8000_0000),
        ]
        try await withTestGateway(feedback: records) { gateway in
            let result = try await FeedbackSamples.reader(gateway.feedbackService).read()
            #expect(result.records == records)
            #expect(
                result.records.map(\.timeISO8601) == [
                    "1970-01-01T00:00:00Z", "2106-02-07T06:28:15Z", "2038-01-19T03:14:08Z",
                ])
        }
    }

    @Test func tokensOfAnyAnnouncedLengthArrive() async throws {
        let records = [
            FeedbackSamples.record(1, tokenLength: 1),
            FeedbackSamples.record(2, tokenLength: 20),
            FeedbackSamples.record(3, tokenLength: 64),
            FeedbackSamples.record(4, tokenLength: 100),
        ]
        try await withTestGateway(feedback: records, configure: { $0.feedbackChunkSize = 5 }) { gateway in
            let result = try await FeedbackSamples.reader(gateway.feedbackService).read()
            #expect(result.failure == nil)
            #expect(result.records == records)
            #expect(result.records.map(\.token.count) == [1, 20, 64, 100])
        }
    }

    @Test func listIsServedOnceThenCleared() async throws {
        let records = FeedbackSamples.records(3)
        try await withTestGateway(feedback: records) { gateway in
            let reader = try FeedbackSamples.reader(gateway.feedbackService)
            #expect(await reader.read().records == records)
            let second = await reader.read()
            #expect(second.failure == nil)
            #expect(second.records.isEmpty)
            gateway.simulator.setFeedback(FeedbackSamples.records(2, from: 10))
            #expect(await reader.read().records == FeedbackSamples.records(2, from: 10))
        }
    }

    @Test func rawSinkSeesTheExactBytesBeforeTheRecordsAreReturned() async throws {
        let records = FeedbackSamples.records(500)
        try await withTestGateway(feedback: records, configure: { $0.feedbackChunkSize = 7 }) { gateway in
            let saved = Locked<[UInt8]>([])
            let result = try await FeedbackSamples.reader(gateway.feedbackService).read { bytes in
                saved.update { $0 += bytes }
            }
            #expect(result.records == records)
            #expect(saved.get() == FeedbackSamples.encode(records))
        }
    }

    @Test func failingRawSinkDoesNotLoseTheRecords() async throws {
        let records = FeedbackSamples.records(50)
        try await withTestGateway(feedback: records, configure: { $0.feedbackChunkSize = 38 * 10 }) { gateway in
            let calls = Locked(0)
            let result = try await FeedbackSamples.reader(gateway.feedbackService).read { _ in
                calls.update { $0 += 1 }
                throw LegacyAPNsError(.fileError, "disk full")
            }
            #expect(result.records == records)
            #expect(result.failure == LegacyAPNsError(.fileError, "disk full"))
            #expect(calls.get() == 1)
        }
    }

    @Test func streamingYieldsEveryTupleWithABoundedBuffer() async throws {
        let records = FeedbackSamples.records(20_000)
        try await withTestGateway(feedback: records, configure: { $0.feedbackChunkSize = 7 }) { gateway in
            let reader = try FeedbackSamples.reader(gateway.feedbackService) { $0.streamBufferLimit = 64 }
            var received: [FeedbackRecord] = []
            for try await record in reader.records() {
                received.append(record)
                if received.count % 1000 == 0 { await Task.yield() }  // a consumer slower than the reads
            }
            #expect(received == records)
        }
    }

    @Test func breakingOutOfTheStreamClosesTheConnection() async throws {
        let server = try RawFeedbackServer(bytes: FeedbackSamples.encode(FeedbackSamples.records(3)), ending: .holdOpen)
        defer { server.stop() }
        let reader = try FeedbackSamples.reader(server.service)
        var first: FeedbackRecord?
        for try await record in reader.records() {
            first = record
            break
        }
        #expect(first == FeedbackSamples.record(1))
    }
}

/// Streams the simulator cannot produce, from a raw TLS server.
@Suite struct FeedbackReaderMalformedStreamTests {
    @Test func truncatedLastTupleReturnsTheCompleteOnesAndAnError() async throws {
        let complete = FeedbackSamples.records(3)
        let bytes = FeedbackSamples.encode(complete + [FeedbackSamples.record(4)]).dropLast(10)
        let server = try RawFeedbackServer(bytes: Array(bytes), chunkSize: 7)
        defer { server.stop() }
        let result = try await FeedbackSamples.reader(server.service).read()
        #expect(result.records == complete)
        #expect(result.byteCount == 3 * 38)
        #expect(result.failure?.code == .malformedFrame)
        #expect(
            result.failure?.reason
                == "the feedback service at \(server.endpoint) closed the connection inside a tuple: 28 bytes of an incomplete tuple at byte 114 were dropped after 3 complete tuples"
        )
        #expect(throws: LegacyAPNsError.self) { try result.get() }
    }

    @Test func truncatedStreamYieldsTheCompleteTuplesThenThrows() async throws {
        let complete = FeedbackSamples.records(3)
        let bytes = FeedbackSamples.encode(complete) + [0x00, 0x00, 0x01]
        let server = try RawFeedbackServer(bytes: bytes)
        defer { server.stop() }
        var received: [FeedbackRecord] = []
        let error = await #expect(throws: LegacyAPNsError.self) {
            for try await record in try FeedbackSamples.reader(server.service).records() { received.append(record) }
        }
        #expect(received == complete)
        #expect(error?.code == .malformedFrame)
    }

    @Test func zeroLengthTokenIsAnErrorAfterTheTuplesBeforeIt() async throws {
        let complete = FeedbackSamples.records(2)
        let bytes = FeedbackSamples.encode(complete) + [0, 0, 0, 9, 0, 0] + FeedbackSamples.encode(complete)
        let server = try RawFeedbackServer(bytes: bytes)
        defer { server.stop() }
        let result = try await FeedbackSamples.reader(server.service).read()
        #expect(result.records == complete)
        #expect(result.failure?.code == .malformedFrame)
        #expect(result.failure?.reason.contains("token length of 0") == true)
    }

    @Test func silentServiceTimesOut() async throws {
        let server = try RawFeedbackServer(bytes: FeedbackSamples.encode(FeedbackSamples.records(1)), ending: .holdOpen)
        defer { server.stop() }
        let result = try await FeedbackSamples.reader(server.service) { $0.idleTimeout = .milliseconds(300) }.read()
        #expect(result.records == FeedbackSamples.records(1))
        #expect(result.failure?.code == .timedOut)
        #expect(result.failure?.timeLimit == .idle)
    }

    @Test func cancellingTheTaskEndsTheRead() async throws {
        let server = try RawFeedbackServer(bytes: FeedbackSamples.encode(FeedbackSamples.records(1)), ending: .holdOpen)
        defer { server.stop() }
        let reader = try FeedbackSamples.reader(server.service) { $0.idleTimeout = .seconds(60) }
        let saw = AsyncGate()
        let task = Task {
            await reader.read { _ in saw.open() }
        }
        await saw.wait()  // the first tuple arrived: the read is under way
        task.cancel()
        let result = await task.value
        #expect(result.failure?.code == .cancelled)
        #expect(result.records == FeedbackSamples.records(1))
    }
}

/// Certificate problems over real TLS.
@Suite struct FeedbackReaderTrustTests {
    @Test func untrustedServerIsRefused() async throws {
        try await withTestGateway(feedback: FeedbackSamples.records(1)) { gateway in
            let untrusted = Certificate.certificates(
                pemRepresentation: Fixtures.bytes(Fixtures.certs("untrusted-ca.pem")))
            let result = try await FeedbackSamples.reader(gateway.feedbackService, trust: untrusted).read()
            #expect(result.failure?.code == .serverUntrusted)
            #expect(result.records.isEmpty)
            // Nothing was handed out, so nothing was cleared.
            #expect(
                try await FeedbackSamples.reader(gateway.feedbackService).read().records == FeedbackSamples.records(1))
        }
    }

    @Test func clientCertificateFromAnotherCAIsRejected() async throws {
        try await withTestGateway(feedback: FeedbackSamples.records(1)) { gateway in
            let stranger = try ClientIdentity(
                pkcs12: Fixtures.bytes(Fixtures.certs("untrusted.p12")), passphrase: "secret")
            let result = try await FeedbackSamples.reader(gateway.feedbackService, identity: stranger).read()
            #expect(result.failure?.code == .certificateRejected)
            #expect(result.records.isEmpty)
        }
    }

    @Test func legacyRC2P12WorksForFeedback() async throws {
        try await withTestGateway(feedback: FeedbackSamples.records(2)) { gateway in
            let legacy = try ClientIdentity(
                pkcs12: Fixtures.bytes(Fixtures.certs("universal-legacy.p12")), passphrase: "secret")
            let result = try await FeedbackSamples.reader(gateway.feedbackService, identity: legacy).read()
            #expect(result.failure == nil)
            #expect(result.records == FeedbackSamples.records(2))
        }
    }

    @Test func nothingListeningIsAConnectionFailure() async throws {
        let port = try freeLoopbackPort()
        let result = try await FeedbackSamples.reader(.custom(host: "127.0.0.1", port: port)).read()
        #expect(result.failure?.code == .connectionFailed)
    }
}

/// A port nothing listens on (bound, then released).
func freeLoopbackPort() throws -> UInt16 {
    try Listener(host: "127.0.0.1", port: 0).endpoint.port
}

/// A one-shot gate: `wait()` suspends until `open()` (which may come first, from any thread).
final class AsyncGate: Sendable {
    private let state = Locked<(isOpen: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.update { state -> [CheckedContinuation<Void, Never>] in
            guard !state.isOpen else { return [] }
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let now = state.update { state -> Bool in
                if state.isOpen { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}
