import APNsCore
import APNsCredentials
internal import APNsRuntime

/// What a ``FeedbackPoller`` waits with between polls. Inject a fake one in tests to run a day of
/// polling in microseconds.
public protocol FeedbackClock: Sendable {
    /// Suspends the calling task for `duration`.
    ///
    /// - Throws: an error (normally `CancellationError`) when the wait was cut short; the poller
    ///   then ends.
    func sleep(for duration: Duration) async throws
}

/// A ``FeedbackClock`` backed by a standard library clock (`ContinuousClock` by default).
public struct StandardFeedbackClock<Base: Clock>: FeedbackClock where Base.Duration == Duration {
    /// The clock slept on.
    public let base: Base

    /// Wraps `base`.
    public init(_ base: Base) {
        self.base = base
    }

    /// Sleeps on ``base``; throws `CancellationError` when the task is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await base.sleep(until: base.now.advanced(by: duration), tolerance: nil)
    }
}

extension FeedbackClock where Self == StandardFeedbackClock<ContinuousClock> {
    /// `ContinuousClock`: real time, including time the machine spends asleep.
    public static var continuous: Self { StandardFeedbackClock(ContinuousClock()) }
}
