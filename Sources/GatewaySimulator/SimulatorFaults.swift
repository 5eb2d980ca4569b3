import APNsCore
import APNsCredentials
internal import APNsRuntime

/// Misbehaviour to inject, so a sender can be tested against everything a gateway may do.
///
/// Counts marked "per connection" restart on every connection; ``failEvery`` counts across all
/// connections of the simulator.
public struct SimulatorFaults: Hashable, Sendable {
    /// Reject every notification to one of these tokens with the given status (8 if unsure).
    public var failingTokens: [DeviceToken: StatusCode] = [:]
    /// Reject every `count`-th notification the simulator receives (across connections).
    public var failEvery: (count: Int, status: StatusCode)? {
        get { failEveryCount.map { ($0, failEveryStatus) } }
        set {
            failEveryCount = newValue?.count
            failEveryStatus = newValue?.status ?? .invalidToken
        }
    }
    private var failEveryCount: Int?
    private var failEveryStatus: StatusCode = .invalidToken
    /// Per connection: after this many accepted notifications, close without an error response
    /// (everything after is discarded).
    public var closeAfter: Int?
    /// Per connection: after this many accepted notifications, answer status 10 (shutdown) naming
    /// the last one, and close.
    public var shutdownAfter: Int?
    /// Time to keep reading (and discarding) the client's frames before sending an error
    /// response: the client keeps writing meanwhile, as it would against a busy gateway.
    public var errorResponseDelay: Duration = .zero
    /// Time to pause before each read: a slow gateway, which makes the client's writes block.
    public var readDelay: Duration = .zero
    /// Send error responses one byte per TLS record, with short pauses: the client must reassemble.
    public var splitErrorResponses = false
    /// Random faults per received notification, reproducible from a seed (used by the soak test).
    public var random: RandomFaults?

    /// No faults: a well-behaved gateway.
    public init() {}

    /// Per-notification probabilities of each fault.
    public struct RandomFaults: Hashable, Sendable {
        /// Seed of the random generator (same seed, same faults for the same traffic).
        public var seed: UInt64
        /// Reject with a random status (2, 3, 4, 5, 6, 7, 8, 128, 255; never 10 or 1).
        public var reject: Double
        /// Answer status 1 (processing error) for the notification.
        public var processingError: Double
        /// Accept, then answer status 10 (shutdown) naming it.
        public var shutdown: Double
        /// Close without an error response before processing it.
        public var silentClose: Double

        /// Creates random faults; probabilities are per notification, from 0 to 1.
        public init(
            seed: UInt64, reject: Double = 0, processingError: Double = 0, shutdown: Double = 0, silentClose: Double = 0
        ) {
            self.seed = seed
            self.reject = reject
            self.processingError = processingError
            self.shutdown = shutdown
            self.silentClose = silentClose
        }
    }

    /// Whether two fault sets are the same.
    public static func == (lhs: SimulatorFaults, rhs: SimulatorFaults) -> Bool {
        lhs.failingTokens == rhs.failingTokens && lhs.failEveryCount == rhs.failEveryCount
            && lhs.failEveryStatus == rhs.failEveryStatus && lhs.closeAfter == rhs.closeAfter
            && lhs.shutdownAfter == rhs.shutdownAfter && lhs.errorResponseDelay == rhs.errorResponseDelay
            && lhs.readDelay == rhs.readDelay && lhs.splitErrorResponses == rhs.splitErrorResponses
            && lhs.random == rhs.random
    }

    /// Hashes the main settings.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(failingTokens)
        hasher.combine(failEveryCount)
        hasher.combine(closeAfter)
        hasher.combine(shutdownAfter)
    }
}
