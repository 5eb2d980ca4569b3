import APNsCore
import APNsCredentials

/// Misbehaviour for ``ProviderSimulator`` to inject, so an HTTP/2 sender can be tested against
/// everything APNs may do.
///
/// Faults apply only to requests that passed Apple's validation (APNsCore's `ProviderRequestValidator`),
/// in this order; the first that applies decides:
///
/// | # | fault | effect |
/// |---|---|---|
/// | 1 | ``stallingTokens`` | the request is never answered (its stream stays open) |
/// | 2 | ``resetAfter`` | the connection is reset (TCP RST, no GOAWAY) when request n + 1 arrives |
/// | 3 | ``shutdownAfter`` | request n + 1 gets 503 Shutdown, then GOAWAY `{"reason":"Shutdown"}` |
/// | 4 | ``failingTokens`` | the reason given (status from Apple's table; 410s carry the current time) |
/// | 5 | ``unregisteredTokens`` | 410 Unregistered with the configured timestamp |
/// | 6 | ``failEvery`` | every n-th valid request (across connections) gets the reason |
/// | 7 | ``random`` | GOAWAY, reset, 503, stall, BadDeviceToken or RST_STREAM REFUSED_STREAM at the given rates |
///
/// Channel management and broadcast requests that passed their validation have one fault of their
/// own, ``channelFailEvery`` (429, 500, 503, Apple's `Service Unavailable` spelt with a space, ...).
///
/// Then, whatever the outcome: ``goawayAfter`` ends a connection after its n-th answered
/// request, and ``errorDelay`` holds every error response back. 429 TooManyRequests, 503
/// ServiceUnavailable, 500 InternalServerError and the other reasons no validation produces are
/// had on demand with ``failingTokens`` or ``failEvery`` and that reason.
public struct ProviderFaults: Sendable, Hashable {
    /// When a token stopped being valid, for a 410 response.
    public enum Timestamp: Sendable, Hashable {
        /// The moment of the request (the simulator's clock).
        case now
        /// This many milliseconds since 1970.
        case milliseconds(UInt64)
    }

    /// Requests to one of these tokens fail with the reason (the status follows the reason:
    /// BadDeviceToken 400, Unregistered 410, TooManyRequests 429, ServiceUnavailable 503, ...).
    public var failingTokens: [DeviceToken: ProviderReason] = [:]
    /// Requests to one of these tokens get 410 Unregistered with the timestamp.
    public var unregisteredTokens: [DeviceToken: Timestamp] = [:]
    /// Every `count`-th valid request the simulator receives (across connections) fails with
    /// `reason`.
    public var failEvery: FailEvery?
    /// Per connection: after this many answered requests, GOAWAY naming the last processed
    /// stream; later streams are not processed (the client must send them again elsewhere).
    public var goawayAfter: Int?
    /// Per connection: after this many requests, the next one gets 503 Shutdown and the
    /// connection GOAWAY `{"reason":"Shutdown"}`.
    public var shutdownAfter: Int?
    /// Per connection: after this many requests, the connection is reset (TCP RST, nothing
    /// more is answered) as the next one arrives: requests in flight have an unknown fate.
    public var resetAfter: Int?
    /// Requests to these tokens are never answered: their streams stay open until the client
    /// gives up (or the connection ends).
    public var stallingTokens: Set<DeviceToken> = []
    /// Every error response (any status but 200) is held back this long.
    public var errorDelay: Duration = .zero
    /// Random faults per valid request, reproducible from a seed (for soak tests).
    public var random: RandomFaults?
    /// Every `count`-th valid channel management or broadcast request (across connections)
    /// fails with `reason`.
    public var channelFailEvery: FailEvery?

    /// No faults: a well-behaved APNs.
    public init() {}

    /// "Every n-th request fails with this reason."
    public struct FailEvery: Sendable, Hashable {
        /// n (at least 1).
        public var count: Int
        /// The reason (its status follows from Apple's table).
        public var reason: ProviderReason

        /// Creates the fault.
        public init(count: Int, reason: ProviderReason = .badDeviceToken) {
            self.count = count
            self.reason = reason
        }
    }

    /// Per-request probabilities of each fault, from 0 to 1, drawn from a generator seeded with
    /// ``seed`` (one generator for the simulator: the same traffic in the same order meets the
    /// same faults).
    public struct RandomFaults: Sendable, Hashable {
        /// Seed of the generator.
        public var seed: UInt64
        /// GOAWAY `{"reason":"Shutdown"}` after answering the request.
        public var goaway: Double
        /// Reset the connection instead of answering.
        public var reset: Double
        /// 503 ServiceUnavailable.
        public var serviceUnavailable: Double
        /// Never answer.
        public var stall: Double
        /// 400 BadDeviceToken.
        public var badDeviceToken: Double
        /// RST_STREAM REFUSED_STREAM instead of an answer: the request was not processed (the
        /// client may send it again, on this connection or another, without counting an attempt).
        public var refusedStream: Double

        /// Creates random faults; rates are per request, from 0 to 1, and add up to at most 1.
        public init(
            seed: UInt64, goaway: Double = 0, reset: Double = 0, serviceUnavailable: Double = 0, stall: Double = 0,
            badDeviceToken: Double = 0, refusedStream: Double = 0
        ) {
            self.seed = seed
            self.goaway = goaway
            self.reset = reset
            self.serviceUnavailable = serviceUnavailable
            self.stall = stall
            self.badDeviceToken = badDeviceToken
            self.refusedStream = refusedStream
        }
    }

    /// Whether any fault needs the simulator-wide counter or generator (a lock per request).
    var needsSharedState: Bool { failEvery != nil || random != nil }
}
