internal import APNsRuntime

/// Where an HTTP/2 send gets its time: a monotonic clock for deadlines and token ages, and the
/// wall clock for the provider token's `iat`. Injectable, so tests can move through an hour of
/// token rotation in milliseconds.
public protocol ProviderClock: Sendable {
    /// Monotonic time, as a duration since any fixed origin.
    func now() -> Duration
    /// UNIX time in seconds.
    func unixTime() -> Int64
}

/// The system's clocks.
public struct SystemProviderClock: ProviderClock {
    /// The system's clocks.
    public init() {}

    /// `CLOCK_MONOTONIC`.
    public func now() -> Duration { .seconds(fractional: Monotonic.now()) }

    /// `time(2)`.
    public func unixTime() -> Int64 { Host.unixTime() }
}
