import FeedbackClient
import GatewaySimulator
import LegacyAPNs
import Synchronization
import TestSupport
import Testing

/// A clock that records every sleep and returns at once (or throws, when told to).
final class FakeFeedbackClock: FeedbackClock {
    private let state = Mutex<(sleeps: [Duration], failAfter: Int?)>(([], nil))

    init(failAfterSleeps: Int? = nil) {
        state.withLock { $0.failAfter = failAfterSleeps }
    }

    var sleeps: [Duration] { state.withLock { $0.sleeps } }

    func sleep(for duration: Duration) async throws {
        let fail = state.withLock { state -> Bool in
            if let limit = state.failAfter, state.sleeps.count >= limit { return true }
            state.sleeps.append(duration)
            return false
        }
        if fail { throw CancellationError() }
        await Task.yield()
    }
}

/// Scripted poll results, with a check that two polls never run at once.
final class ScriptedPolls: Sendable {
    private let state = Mutex<(script: [FeedbackResult], calls: Int, active: Int, maximumActive: Int)>(([], 0, 0, 0))

    init(_ script: [FeedbackResult]) {
        state.withLock { $0.script = script }
    }

    var calls: Int { state.withLock { $0.calls } }
    var maximumActive: Int { state.withLock { $0.maximumActive } }

    func poll() async -> FeedbackResult {
        let result = state.withLock { state -> FeedbackResult in
            state.active += 1
            state.maximumActive = max(state.maximumActive, state.active)
            defer { state.calls += 1 }
            return state.calls < state.script.count ? state.script[state.calls] : FeedbackResult(records: [])
        }
        for _ in 0..<3 { await Task.yield() }  // give a second poll every chance to start
        state.withLock { $0.active -= 1 }
        return result
    }
}

@Suite struct FeedbackPollerTests {
    static let ok = FeedbackResult(records: FeedbackSamples.records(2))
    static let refused = FeedbackResult(records: [], failure: LegacyAPNsError(.connectionFailed, "refused"))
    static let rejected = FeedbackResult(records: [], failure: LegacyAPNsError(.certificateRejected, "unknown CA"))
    static let untrusted = FeedbackResult(records: [], failure: LegacyAPNsError(.serverUntrusted, "not trusted"))

    static func poller(
        _ polls: ScriptedPolls, clock: FakeFeedbackClock, maximumFailures: Int? = nil
    ) -> FeedbackPoller<FakeFeedbackClock> {
        FeedbackPoller(
            interval: .seconds(60),
            backoff: .init(initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(5)),
            maximumConsecutiveFailures: maximumFailures, clock: clock, poll: { await polls.poll() })
    }

    @Test func pollsRepeatedlyAtTheInterval() async throws {
        let polls = ScriptedPolls([Self.ok, FeedbackResult(records: []), Self.ok])
        let clock = FakeFeedbackClock()
        var iterator = Self.poller(polls, clock: clock).makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.number == 1)
        #expect(first?.records == FeedbackSamples.records(2))
        #expect(clock.sleeps.isEmpty)  // the first poll starts at once
        #expect(try await iterator.next()?.records.isEmpty == true)
        let third = try await iterator.next()
        #expect(third?.number == 3)
        #expect(third?.delayBeforeNextPoll == .seconds(60))
        #expect(clock.sleeps == [.seconds(60), .seconds(60)])
        #expect(polls.calls == 3)
    }

    @Test func failuresBackOffExponentiallyUpToTheCapThenTheIntervalReturns() async throws {
        let polls = ScriptedPolls([
            Self.refused, Self.refused, Self.refused, Self.refused, Self.refused, Self.ok, Self.refused,
        ])
        let clock = FakeFeedbackClock()
        var iterator = Self.poller(polls, clock: clock).makeAsyncIterator()
        var outcomes: [(Int, Duration)] = []
        for _ in 0..<7 {
            let poll = try #require(try await iterator.next())
            outcomes.append((poll.consecutiveFailures, poll.delayBeforeNextPoll))
        }
        #expect(outcomes.map(\.0) == [1, 2, 3, 4, 5, 0, 1])
        #expect(
            outcomes.map(\.1) == [
                .seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5), .seconds(60), .seconds(1),
            ])
        #expect(clock.sleeps == [.seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5), .seconds(60)])
    }

    @Test(arguments: [rejected, untrusted])
    func certificateFailureEndsPollingWithThatError(failure: FeedbackResult) async throws {
        let polls = ScriptedPolls([Self.ok, Self.refused, failure, Self.ok])
        let clock = FakeFeedbackClock()
        var iterator = Self.poller(polls, clock: clock).makeAsyncIterator()
        #expect(try await iterator.next()?.failure == nil)
        #expect(try await iterator.next()?.failure?.code == .connectionFailed)
        let error = await #expect(throws: LegacyAPNsError.self) { try await iterator.next() }
        #expect(error == failure.failure)
        #expect(try await iterator.next() == nil)
        #expect(polls.calls == 3)
    }

    @Test func givesUpAfterTheConfiguredNumberOfFailuresInARow() async throws {
        let polls = ScriptedPolls([Self.refused, Self.ok, Self.refused, Self.refused, Self.refused])
        let clock = FakeFeedbackClock()
        var numbers: [Int] = []
        let error = await #expect(throws: LegacyAPNsError.self) {
            for try await poll in Self.poller(polls, clock: clock, maximumFailures: 3) { numbers.append(poll.number) }
        }
        #expect(numbers == [1, 2, 3, 4, 5])  // the failing poll is still seen, then the error
        #expect(error?.code == .connectionFailed)
        #expect(polls.calls == 5)
    }

    @Test func pollsNeverOverlapAndOnlyRunWhenAsked() async throws {
        let polls = ScriptedPolls(Array(repeating: Self.ok, count: 20))
        let clock = FakeFeedbackClock()
        var iterator = Self.poller(polls, clock: clock).makeAsyncIterator()
        for expected in 1...5 {
            _ = try await iterator.next()
            for _ in 0..<10 { await Task.yield() }  // a slow consumer
            #expect(polls.calls == expected)
        }
        var count = 0
        for try await _ in Self.poller(polls, clock: FakeFeedbackClock(failAfterSleeps: 10)) { count += 1 }
        #expect(count == 11)
        #expect(polls.maximumActive == 1)
    }

    @Test func aClockThatThrowsEndsPollingQuietly() async throws {
        let polls = ScriptedPolls([Self.ok, Self.ok, Self.ok])
        var count = 0
        for try await _ in Self.poller(polls, clock: FakeFeedbackClock(failAfterSleeps: 1)) { count += 1 }
        #expect(count == 2)
        #expect(polls.calls == 2)
    }

    @Test func cancellationEndsPolling() async throws {
        let polls = ScriptedPolls([])
        let poller = Self.poller(polls, clock: FakeFeedbackClock())
        let started = AsyncGate()
        let task = Task {
            var count = 0
            for try await _ in poller {
                count += 1
                started.open()
            }
            return count
        }
        await started.wait()
        task.cancel()
        let count = try await task.value
        #expect(count >= 1)
    }

    @Test func backoffDelays() {
        let backoff = FeedbackPoller<FakeFeedbackClock>.Backoff(
            initialDelay: .milliseconds(500), multiplier: 3, maximumDelay: .seconds(10))
        #expect(
            (1...5).map { backoff.delay(afterFailures: $0) } == [
                .milliseconds(500), .milliseconds(1500), .milliseconds(4500), .seconds(10), .seconds(10),
            ])
        #expect(backoff.delay(afterFailures: 10_000) == .seconds(10))
    }

    /// The real reader against the simulator, with a fast clock: the list once, then nothing
    /// until the service has new tuples.
    @Test func pollsTheSimulatorWhichServesItsListOnce() async throws {
        try await withTestGateway(feedback: FeedbackSamples.records(3)) { gateway in
            let reader = try FeedbackSamples.reader(gateway.feedbackService)
            let clock = FakeFeedbackClock()
            var iterator = FeedbackPoller(reader: reader, interval: .seconds(86_400), clock: clock).makeAsyncIterator()
            #expect(try await iterator.next()?.records == FeedbackSamples.records(3))
            let second = try await iterator.next()
            #expect(second?.failure == nil)
            #expect(second?.records.isEmpty == true)
            gateway.simulator.setFeedback(FeedbackSamples.records(1, from: 7))
            #expect(try await iterator.next()?.records == FeedbackSamples.records(1, from: 7))
            #expect(clock.sleeps == [.seconds(86_400), .seconds(86_400)])
        }
    }

    @Test func pollerEndsOnARejectedClientCertificate() async throws {
        try await withTestGateway(feedback: FeedbackSamples.records(3)) { gateway in
            let stranger = try ClientIdentity(
                pkcs12: Fixtures.bytes(Fixtures.certs("untrusted.p12")), passphrase: "secret")
            let reader = try FeedbackSamples.reader(gateway.feedbackService, identity: stranger)
            let error = await #expect(throws: LegacyAPNsError.self) {
                for try await _ in FeedbackPoller(reader: reader, interval: .seconds(1), clock: FakeFeedbackClock()) {}
            }
            #expect(error?.code == .certificateRejected)
        }
    }
}
