import APNsCore
import APNsRuntime
import GatewaySimulator
import TestSupport
import Testing

@testable import HTTP2Client

/// The real HTTP/2 connection shell (the client's `ProviderConnection`: batching into TLS-sized
/// writes, partial writes, reading between writes, GOAWAY, refused and reset streams, stream
/// timeouts, reconnects) driven through its transport seam against the HTTP/2 simulator's sans-IO
/// connection, in memory, with nghttp2 on both ends and random faults on both the simulator and
/// the pipe (``SimulatedProvider``). The delivery ledger the binary client's model tests use must
/// hold: every notification in exactly one bucket, nothing accepted lost, nothing rejected or
/// reported not sent delivered, and every notification the simulator accepted twice named a
/// possible duplicate. Deterministic: the same seed, the same conversation.
@Suite struct ProviderConnectionModelTests {
    struct Outcome {
        var report: ProviderSendReport
        var accepted: [ProviderAcceptance]
        var provider: SimulatedProvider
        var delivered: [Int]
    }

    static func run(
        count: Int, faults: SimulatedProvider.Faults, simulator: ProviderFaults = ProviderFaults(), seed: UInt64,
        streams: UInt32 = 100, requestTimeout: Duration = .seconds(5), tokens: Bool = true
    ) -> Outcome {
        let provider = SimulatedProvider(
            faults: faults, simulator: simulator, seed: seed, maximumConcurrentStreams: streams,
            authentication: tokens ? .token : .certificate(topics: ["com.example.legacy"], environment: .both))
        let queue = ProviderWorkQueue(capacity: count + 1)
        _ = queue.pushWaiting(
            contentsOf: (1...count).map { (SimulatedProvider.request($0), UInt64($0)) }, evenIfStopped: false)
        queue.finish()
        var delivery = ProviderConnectionMachine.Configuration()
        delivery.usesTokens = tokens
        delivery.maximumAttempts = 4
        delivery.requestTimeout = requestTimeout
        delivery.retryDelay = Backoff(initialDelay: .milliseconds(100), multiplier: 2, maximumDelay: .seconds(1))
        delivery.reconnect = ReconnectPolicy(initialDelay: .zero, maximumConsecutiveFailures: 1000)
        let verdicts = Locked<[ProviderAcceptance]>([])
        let events: @Sendable (ProviderEvent) -> Void = { event in
            if case .accepted(_, let acceptance) = event { verdicts.update { $0.append(acceptance) } }
        }
        let connection = ProviderConnection(
            slot: 0,
            settings: .init(
                endpoint: Endpoint(host: "api.push.apple.com", port: 443),
                credentials: tokens
                    ? .token(ProviderPair.keyA, keyID: "ABC123DEFG", teamID: ProviderPair.teamID)
                    : .certificate(TestGateway.clientIdentity),
                connectTimeout: 5,
                defaultTopic: nil, clock: provider.time),
            dialer: provider, delivery: delivery, queue: queue, events: events)
        var report = connection.run()
        ProviderStream.settleLeftovers(of: queue, in: &report, keepsLists: true, events: events)
        return Outcome(
            report: report, accepted: verdicts.get(), provider: provider, delivered: provider.delivered(count: count))
    }

    /// The ledger's check of `outcome`, with the positions `bad` always refused.
    static func check(
        _ outcome: Outcome, count: Int, bad: Set<Int> = [], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let report = outcome.report
        let buckets = DeliveryLedger.Buckets(
            sent: report.sent, accepted: report.accepted, acceptedPositions: outcome.accepted.map { Int($0.position) },
            rejected: report.rejected.map { (Int($0.position), $0.mayHaveBeenDelivered) },
            unconfirmed: report.unconfirmed.map { (Int($0.position), $0.mayHaveBeenDelivered) },
            possibleDuplicates: report.possibleDuplicates,
            namedDuplicates: Set(report.possiblyDuplicated.map { Int($0.position) }))
        DeliveryLedger(delivered: outcome.delivered, badPositions: bad)
            .check(buckets, count: count, sourceLocation: sourceLocation)
        // An acceptance after an attempt that may have been delivered says so.
        for acceptance in outcome.accepted where outcome.delivered[Int(acceptance.position)] > 1 {
            #expect(acceptance.isPossibleDuplicate, "#\(acceptance.position)", sourceLocation: sourceLocation)
        }
    }

    static func badTokens(every step: Int, count: Int) -> (ProviderFaults, Set<Int>) {
        var faults = ProviderFaults()
        let bad = Set(stride(from: step, through: count, by: step))
        for position in bad {
            faults.failingTokens[SimulatedProvider.request(position).deviceToken] = .badDeviceToken
        }
        return (faults, bad)
    }

    @Test func aCleanPipeDeliversEverythingOnceOnOneConnection() {
        let outcome = Self.run(count: 1_000, faults: .init(), seed: 1)
        Self.check(outcome, count: 1_000)
        #expect(outcome.report.accepted == 1_000)
        #expect(outcome.report.connections == 1)
        #expect(outcome.report.retried == 0)
        #expect(outcome.delivered.dropFirst().allSatisfy { $0 == 1 })
    }

    @Test func partialWritesShortReadsAndWaitsChangeNothingButTheBytes() {
        var (simulator, bad) = Self.badTokens(every: 97, count: 2_000)
        simulator.goawayAfter = 700
        for seed in UInt64(1)...6 {
            let outcome = Self.run(
                count: 2_000, faults: .init(partialWrite: 0.4, wantWrite: 0.2, shortRead: 0.5), simulator: simulator,
                seed: seed)
            Self.check(outcome, count: 2_000, bad: bad)
            #expect(outcome.report.rejected.count == bad.count)
            #expect(outcome.report.rejected.allSatisfy { $0.reason == .badDeviceToken && !$0.mayHaveBeenDelivered })
            #expect(outcome.report.unconfirmed.isEmpty)
            #expect(outcome.report.possibleDuplicates == 0)
            #expect(outcome.report.connections >= 3, "a GOAWAY every 700 answers")
            #expect(outcome.report.failure == nil)
        }
    }

    @Test func stalledStreamsAreResetAndRetriedThenEndUnconfirmedWhileTheRestGoesThrough() {
        var simulator = ProviderFaults()
        let stalled: Set<Int> = [7, 300, 301, 999]
        simulator.stallingTokens = Set(stalled.map { SimulatedProvider.request($0).deviceToken })
        let outcome = Self.run(
            count: 1_000, faults: .init(partialWrite: 0.2, shortRead: 0.2), simulator: simulator, seed: 5)
        Self.check(outcome, count: 1_000)
        #expect(Set(outcome.report.unconfirmed.map { Int($0.position) }) == stalled)
        #expect(outcome.report.unconfirmed.allSatisfy { $0.mayHaveBeenDelivered }, "timed out: the fate is unknown")
        #expect(outcome.report.accepted == 1_000 - stalled.count)
        #expect(outcome.report.retried >= 3 * stalled.count, "each stalled one was tried four times")
        #expect(outcome.provider.time.seconds >= 4 * 5, "four request timeouts passed, in simulated time")
    }

    @Test func goawaysRefusedStreamsAndUnavailableAreRetriedWithoutDuplicates() {
        var (simulator, bad) = Self.badTokens(every: 151, count: 2_000)
        simulator.random = .init(seed: 0, goaway: 0.004, serviceUnavailable: 0.01, refusedStream: 0.02)
        var sawRefusals = false
        for seed in UInt64(100)...105 {
            let outcome = Self.run(
                count: 2_000, faults: .init(partialWrite: 0.2, shortRead: 0.2), simulator: simulator, seed: seed)
            Self.check(outcome, count: 2_000, bad: bad)
            #expect(outcome.report.possibleDuplicates == 0, "nothing was lost with a connection")
            #expect(outcome.delivered.dropFirst().allSatisfy { $0 <= 1 })
            #expect(outcome.report.connections > 1)
            #expect(outcome.report.failure == nil)
            sawRefusals = sawRefusals || outcome.report.retried > 0
        }
        #expect(sawRefusals)
    }

    @Test func resetsStallsAndConnectionsDyingMidBatchNeverLoseAndNeverSilentlyDuplicate() {
        var (simulator, bad) = Self.badTokens(every: 113, count: 2_000)
        simulator.random = .init(
            seed: 0, goaway: 0.002, reset: 0.002, serviceUnavailable: 0.005, stall: 0.003, badDeviceToken: 0.002,
            refusedStream: 0.01)
        let faults = SimulatedProvider.Faults(
            connectFailure: 0.05, partialWrite: 0.3, wantWrite: 0.1, shortRead: 0.3, deathPerWrite: 0.01)
        var sawDuplicates = false
        var sawDeaths = false
        var sawUnknownFate = false
        for seed in UInt64(1000)...1011 {
            let outcome = Self.run(count: 2_000, faults: faults, simulator: simulator, seed: seed)
            Self.check(outcome, count: 2_000, bad: bad)
            #expect(outcome.report.failure == nil)
            sawDuplicates = sawDuplicates || outcome.delivered.contains { $0 > 1 }
            sawDeaths = sawDeaths || outcome.provider.deaths > 0
            sawUnknownFate = sawUnknownFate || !outcome.report.unknownFate.isEmpty
        }
        #expect(sawDeaths, "the faults should have killed connections in the middle of a batch")
        #expect(sawDuplicates, "the faults should have forced at-least-once resends the simulator accepted twice")
        _ = sawUnknownFate
    }

    /// With certificate authentication: a provider token is signed afresh (ECDSA, random) for
    /// every connection, and HPACK's Huffman code makes its length on the wire vary, which moves
    /// every later partial write.
    @Test func theSameSeedIsTheSameConversation() {
        var simulator = ProviderFaults()
        simulator.random = .init(seed: 0, reset: 0.005, stall: 0.005, refusedStream: 0.01)
        let faults = SimulatedProvider.Faults(partialWrite: 0.3, shortRead: 0.3, deathPerWrite: 0.1)
        let first = Self.run(count: 500, faults: faults, simulator: simulator, seed: 42, tokens: false)
        let second = Self.run(count: 500, faults: faults, simulator: simulator, seed: 42, tokens: false)
        #expect(first.delivered == second.delivered)
        #expect(first.accepted.map(\.position) == second.accepted.map(\.position))
        #expect(first.report.retried == second.report.retried)
        #expect(first.report.connections == second.report.connections)
        #expect(first.report.unconfirmed.map(\.position) == second.report.unconfirmed.map(\.position))
        #expect(first.report.retried > 0 && first.provider.deaths > 0)
        Self.check(first, count: 500)
    }
}
