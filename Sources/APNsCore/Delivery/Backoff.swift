/// Delays that grow with failures in a row: ``initialDelay`` after the first, times
/// ``multiplier`` for each further one, never more than ``maximumDelay``.
///
/// The package's one backoff: connection slots reconnecting (``ReconnectPolicy``), the feedback
/// poller after failed polls, and HTTP/2 retries all use it.
public struct Backoff: Hashable, Sendable {
    /// Delay after the first failure.
    public var initialDelay: Duration
    /// Growth per further failure (values below 1 count as 1).
    public var multiplier: Double
    /// Upper bound of the delay.
    public var maximumDelay: Duration

    /// Creates a backoff; the defaults (1 s, doubling, at most 5 minutes) suit a daily poll.
    public init(
        initialDelay: Duration = .seconds(1), multiplier: Double = 2, maximumDelay: Duration = .seconds(300)
    ) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
    }

    /// The delay before the attempt that follows `failures` failures in a row (zero for none).
    public func delay(afterFailures failures: Int) -> Duration {
        guard failures > 0 else { return .zero }
        var delay = initialDelay
        var count = 1
        while count < failures, delay < maximumDelay {
            delay = delay * Swift.max(1, multiplier)
            count += 1
        }
        return Swift.min(delay, maximumDelay)
    }
}
