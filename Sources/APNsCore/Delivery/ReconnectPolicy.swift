/// How a connection slot retries after failures.
///
/// After a failure (connect refused, TLS error other than a certificate problem, a connection that
/// closed without a verdict and without progress) the next attempt waits `initialDelay`, then
/// `initialDelay * multiplier`, and so on up to `maximumDelay`. After
/// `maximumConsecutiveFailures` failures in a row the send stops with
/// ``LegacyAPNsError/Code-swift.struct/connectionFailed``. Reconnecting after an error response or
/// after a confirmation is immediate and is not a failure. A certificate problem stops at once.
public struct ReconnectPolicy: Hashable, Sendable {
    /// Seconds before the first retry.
    public var initialDelay: Double
    /// Growth of the delay per further failure.
    public var multiplier: Double
    /// Upper bound of the delay, in seconds.
    public var maximumDelay: Double
    /// Failures in a row before giving up.
    public var maximumConsecutiveFailures: Int

    /// Creates a policy; the defaults retry after 0.2, 0.4 and 0.8 s and give up at the fourth failure.
    public init(
        initialDelay: Double = 0.2, multiplier: Double = 2, maximumDelay: Double = 5,
        maximumConsecutiveFailures: Int = 4
    ) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
        self.maximumConsecutiveFailures = maximumConsecutiveFailures
    }

    /// The delay before the attempt that follows `failures` failures in a row (0 for none).
    public func delay(afterFailures failures: Int) -> Double {
        guard failures > 0 else { return 0 }
        var delay = initialDelay
        for _ in 1..<failures { delay *= multiplier }
        return Swift.min(delay, maximumDelay)
    }
}
