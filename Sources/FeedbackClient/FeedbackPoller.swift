import APNsCore
import APNsCredentials
internal import APNsRuntime

/// Polls the feedback service at an interval, as an asynchronous sequence of polls.
///
/// ```swift
/// let poller = FeedbackPoller(reader: reader, interval: .seconds(86_400))  // Apple asked for daily
/// for try await poll in poller {
///     for token in poll.records.tokensToStopSending(lastRegistration: lastRegistration) {
///         unregister(token)
///     }
///     if let failure = poll.failure { log("poll failed: \(failure); next in \(poll.delayBeforeNextPoll)") }
/// }
/// ```
///
/// - The first poll starts at once; after a successful poll the next one starts ``interval``
///   after it ended. Polls are strictly sequential: the iterator reads one, returns it, and only
///   on the next call waits and reads again, so two polls never overlap and nothing polls while
///   you handle a result.
/// - A failed poll (connection refused, a timeout, a stream that ends inside a tuple) is still
///   returned, with its complete tuples and its ``FeedbackPoll/failure``; the next poll then
///   waits ``Backoff`` delays growing exponentially up to ``Backoff/maximumDelay``, and the
///   interval again after the next success.
/// - A failure that cannot heal (``LegacyAPNsError/stopsSending``: a refused or untrusted
///   certificate, unusable credentials) ends the sequence by throwing it: retrying cannot fix it.
///   So does reaching ``maximumConsecutiveFailures``, with the last failure.
/// - Cancelling the task, or the clock's sleep throwing, ends the sequence (it returns nil).
public struct FeedbackPoller<PollClock: FeedbackClock>: AsyncSequence, Sendable {
    /// The outcome of one poll.
    public typealias Element = FeedbackPoll

    /// Delays after failed polls: the package's one `Backoff` of APNsCore (defaults: 1 s, doubling,
    /// at most 5 minutes).
    public typealias Backoff = APNsCore.Backoff

    /// Time between the end of a successful poll and the start of the next.
    public let interval: Duration
    /// Delays after failures.
    public let backoff: Backoff
    /// Failed polls in a row after which the sequence throws the last failure; nil polls forever.
    public let maximumConsecutiveFailures: Int?
    let clock: PollClock
    let poll: @Sendable () async -> FeedbackResult

    /// Creates a poller reading `reader`.
    ///
    /// - Parameters:
    ///   - reader: The reader each poll uses (its configuration sets the time limits of a poll).
    ///   - interval: Time between the end of a successful poll and the start of the next.
    ///   - backoff: Delays after failed polls.
    ///   - maximumConsecutiveFailures: Give up (throw) after this many failures in a row; nil
    ///     never gives up except on a certificate failure.
    ///   - clock: What to wait with (``FeedbackClock/continuous`` in production, a fake in tests).
    ///   - rawSink: Passed to every ``FeedbackReader/read(rawSink:)``.
    public init(
        reader: FeedbackReader, interval: Duration, backoff: Backoff = Backoff(),
        maximumConsecutiveFailures: Int? = nil, clock: PollClock, rawSink: FeedbackReader.RawSink? = nil
    ) {
        self.init(
            interval: interval, backoff: backoff, maximumConsecutiveFailures: maximumConsecutiveFailures,
            clock: clock, poll: { await reader.read(rawSink: rawSink) })
    }

    /// Creates a poller over any poll operation (tests script results with it).
    package init(
        interval: Duration, backoff: Backoff = Backoff(), maximumConsecutiveFailures: Int? = nil,
        clock: PollClock, poll: @escaping @Sendable () async -> FeedbackResult
    ) {
        self.interval = interval
        self.backoff = backoff
        self.maximumConsecutiveFailures = maximumConsecutiveFailures
        self.clock = clock
        self.poll = poll
    }

    /// Starts polling (the first poll happens on the first ``AsyncIterator/next()``).
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(poller: self)
    }

    /// Runs the polls one after another.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private let poller: FeedbackPoller
        private var number = 0
        private var consecutiveFailures = 0
        private var delay: Duration = .zero
        private var pendingError: LegacyAPNsError?
        private var isDone = false

        init(poller: FeedbackPoller) {
            self.poller = poller
        }

        /// Waits as the schedule says, polls once, and returns the outcome.
        ///
        /// - Returns: nil once the task is cancelled or the clock's sleep throws.
        /// - Throws: a certificate failure, or the last failure after
        ///   ``FeedbackPoller/maximumConsecutiveFailures`` (a ``LegacyAPNsError``).
        public mutating func next() async throws -> FeedbackPoll? {
            if let pendingError {
                self.pendingError = nil
                isDone = true
                throw pendingError
            }
            guard !isDone, !Task.isCancelled else { return nil }
            if number > 0 {
                do {
                    try await poller.clock.sleep(for: delay)
                } catch {
                    isDone = true
                    return nil
                }
                guard !Task.isCancelled else {
                    isDone = true
                    return nil
                }
            }
            let result = await poller.poll()
            number += 1
            if let failure = result.failure {
                consecutiveFailures += 1
                delay = poller.backoff.delay(afterFailures: consecutiveFailures)
                if failure.code == .cancelled {
                    isDone = true
                    if result.records.isEmpty { return nil }
                } else if failure.stopsSending {
                    guard !result.records.isEmpty else {
                        isDone = true
                        throw failure
                    }
                    pendingError = failure
                } else if let limit = poller.maximumConsecutiveFailures, consecutiveFailures >= limit {
                    pendingError = failure
                }
            } else {
                consecutiveFailures = 0
                delay = poller.interval
            }
            return FeedbackPoll(
                number: number, records: result.records, failure: result.failure,
                consecutiveFailures: consecutiveFailures, delayBeforeNextPoll: delay, seconds: result.seconds)
        }
    }
}

extension FeedbackPoller where PollClock == StandardFeedbackClock<ContinuousClock> {
    /// Creates a poller reading `reader` that waits on `ContinuousClock`.
    public init(
        reader: FeedbackReader, interval: Duration, backoff: Backoff = Backoff(),
        maximumConsecutiveFailures: Int? = nil, rawSink: FeedbackReader.RawSink? = nil
    ) {
        self.init(
            reader: reader, interval: interval, backoff: backoff,
            maximumConsecutiveFailures: maximumConsecutiveFailures, clock: .continuous, rawSink: rawSink)
    }
}

/// One poll of a ``FeedbackPoller``.
public struct FeedbackPoll: Sendable {
    /// 1 for the first poll.
    public var number: Int
    /// The complete tuples received (also when the poll failed part way).
    public var records: [FeedbackRecord]
    /// Why the poll failed, or nil (see ``FeedbackResult/failure``).
    public var failure: LegacyAPNsError?
    /// Failed polls in a row, this one included (0 after a success).
    public var consecutiveFailures: Int
    /// How long the poller will wait before the next poll: the interval, or a backoff delay.
    public var delayBeforeNextPoll: Duration
    /// Seconds the poll took.
    public var seconds: Double

    /// Creates a poll outcome.
    public init(
        number: Int, records: [FeedbackRecord], failure: LegacyAPNsError?, consecutiveFailures: Int,
        delayBeforeNextPoll: Duration, seconds: Double
    ) {
        self.number = number
        self.records = records
        self.failure = failure
        self.consecutiveFailures = consecutiveFailures
        self.delayBeforeNextPoll = delayBeforeNextPoll
        self.seconds = seconds
    }
}
