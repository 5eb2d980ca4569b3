/// How a connection slot retries after failures.
///
/// A failure is a connection attempt that did not succeed (connect refused, a TLS error that may
/// heal) or a connection that ended without a verdict and without progress. After one, the next
/// attempt waits ``backoff``'s delay; after ``maximumConsecutiveFailures`` in a row the send stops
/// with ``LegacyAPNsError/Code-swift.struct/connectionFailed``. A connection that confirmed or
/// rejected something made progress: the count starts again, so a gateway that keeps accepting
/// work is never abandoned. Reconnecting after an error response or a confirmation is immediate.
/// A failure that cannot heal (``LegacyAPNsError/stopsSending``) stops at once. Until a slot's first
/// verdict, a connection the gateway ends without one counts twice (the refusal rule of
/// ``DeliveryStateMachine``), so a gateway refusing the certificate's environment or topic stops
/// the send at the second connection with the default of four.
public struct ReconnectPolicy: Hashable, Sendable {
    /// Delays between attempts after failures.
    public var backoff: Backoff
    /// Failures in a row (without progress in between) before giving up.
    public var maximumConsecutiveFailures: Int

    /// Creates a policy; the defaults retry after 0.2, 0.4 and 0.8 s and give up at the fourth
    /// failure in a row.
    public init(
        initialDelay: Duration = .milliseconds(200), multiplier: Double = 2, maximumDelay: Duration = .seconds(5),
        maximumConsecutiveFailures: Int = 4
    ) {
        self.backoff = Backoff(initialDelay: initialDelay, multiplier: multiplier, maximumDelay: maximumDelay)
        self.maximumConsecutiveFailures = Swift.max(1, maximumConsecutiveFailures)
    }

    /// The delay before the attempt that follows `failures` failures in a row (zero for none).
    public func delay(afterFailures failures: Int) -> Duration {
        backoff.delay(afterFailures: failures)
    }
}
