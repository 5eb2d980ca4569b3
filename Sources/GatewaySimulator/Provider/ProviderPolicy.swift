import APNsCore
import APNsCredentials
internal import APNsRuntime
import Synchronization

/// What every connection of one ``ProviderSimulator`` shares: its rules (the configuration less
/// TLS), the counters, the fault counters and generator, the recorder and the event handler.
/// Connections touch the locked parts once per read, not per request.
package final class ProviderPolicy: Sendable {
    let environment: ProviderSimulator.Environment
    let keys: [String: ProviderSimulator.AuthKey]
    let teamTopics: [String: [String]]
    let maximumConcurrentStreams: UInt32
    let excessStreams: ProviderSimulator.ExcessStreams
    let faults: ProviderFaults
    /// Whether any per-request fault is configured (most runs: none, and no lookups per request).
    let hasRequestFaults: Bool
    let limits: ProviderSimulator.Limits
    let clock: ProviderSimulator.Clock
    let recorder: (any ProviderRecorder)?
    let recordingInterval: Double
    let seed: UInt64
    let events: (@Sendable (ProviderSimulatorEvent) -> Void)?
    let channels: ChannelStore
    let broadcastDisabledBundles: Set<String>

    struct Counters {
        var statistics = ProviderSimulator.Statistics()
        /// Valid requests seen, for ``ProviderFaults/failEvery``.
        var validRequests = 0
        /// Valid channel and broadcast requests seen, for ``ProviderFaults/channelFailEvery``.
        var validChannelRequests = 0
        var random: SplitMix64
    }

    let counters: Mutex<Counters>
    let stopping = Atomic<Bool>(false)

    package convenience init(_ configuration: ProviderSimulator.Configuration) {
        self.init(
            environment: configuration.environment, authKeys: configuration.authKeys,
            teamTopics: configuration.teamTopics, maximumConcurrentStreams: configuration.maximumConcurrentStreams,
            excessStreams: configuration.excessStreams, faults: configuration.faults, limits: configuration.limits,
            clock: configuration.clock,
            recorder: configuration.recorder, recordingInterval: configuration.recordingInterval,
            seed: configuration.seed, events: configuration.events, channels: configuration.channels,
            broadcastDisabledBundles: configuration.broadcastDisabledBundles)
    }

    /// The rules without a TLS identity (for the fuzz target and in-memory tests).
    package init(
        environment: ProviderSimulator.Environment = .development, authKeys: [ProviderSimulator.AuthKey] = [],
        teamTopics: [String: [String]] = [:], maximumConcurrentStreams: UInt32 = 1000,
        excessStreams: ProviderSimulator.ExcessStreams = .goaway, faults: ProviderFaults = ProviderFaults(),
        limits: ProviderSimulator.Limits = .init(),
        clock: ProviderSimulator.Clock = .system, recorder: (any ProviderRecorder)? = nil,
        recordingInterval: Duration = .zero, seed: UInt64 = 1,
        events: (@Sendable (ProviderSimulatorEvent) -> Void)? = nil, channels: ChannelStore = ChannelStore(),
        broadcastDisabledBundles: Set<String> = []
    ) {
        self.channels = channels
        self.broadcastDisabledBundles = broadcastDisabledBundles
        self.environment = environment
        var keys: [String: ProviderSimulator.AuthKey] = [:]
        for key in authKeys { keys[key.keyID] = key }
        self.keys = keys
        self.teamTopics = teamTopics.mapValues(ProviderTokenAuthority.expand)
        self.maximumConcurrentStreams = max(1, maximumConcurrentStreams)
        self.excessStreams = excessStreams
        self.faults = faults
        hasRequestFaults =
            !faults.failingTokens.isEmpty || !faults.unregisteredTokens.isEmpty || !faults.stallingTokens.isEmpty
            || faults.failEvery != nil || faults.resetAfter != nil || faults.shutdownAfter != nil
            || faults.random != nil
        self.limits = limits
        self.clock = clock
        self.recorder = recorder
        self.recordingInterval = recordingInterval.inSeconds
        self.seed = seed
        self.events = events
        counters = Mutex(Counters(random: SplitMix64(seed: faults.random?.seed ?? 0)))
    }

    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    func emit(_ event: ProviderSimulatorEvent) { events?(event) }

    /// Counters so far.
    package var statistics: ProviderSimulator.Statistics { counters.withLock { $0.statistics } }

    func update(_ body: (inout ProviderSimulator.Statistics) -> Void) {
        counters.withLock { body(&$0.statistics) }
    }

    /// Counts one valid channel or broadcast request: the reason it fails with, if
    /// ``ProviderFaults/channelFailEvery`` says so.
    func nextValidChannelRequest() -> ProviderReason? {
        guard let every = faults.channelFailEvery, every.count > 0 else { return nil }
        return counters.withLock { counters in
            counters.validChannelRequests += 1
            return counters.validChannelRequests % every.count == 0 ? every.reason : nil
        }
    }

    /// Counts one valid request and draws its random number (one lock, only when a fault needs it).
    func nextValidRequest() -> (count: Int, roll: Double) {
        counters.withLock { counters in
            counters.validRequests += 1
            let roll = Double(counters.random.next() >> 11) / Double(1 << 53)
            return (counters.validRequests, roll)
        }
    }
}
