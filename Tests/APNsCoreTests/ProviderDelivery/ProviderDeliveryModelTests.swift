import APNsCore
import TestSupport
import Testing

/// A pool of ``ProviderConnectionMachine``s sharing one queue, against an in-memory APNs that
/// answers late or never, refuses and resets streams, sends GOAWAY mid-burst, drops connections,
/// answers 429 and 503, refuses bad tokens and reports unregistered ones, all from a seed and in
/// virtual time. The ledger must hold: nothing accepted that APNs did not process, nothing
/// processed twice without being reported as a possible duplicate, every notification in exactly
/// one bucket.
@Suite struct ProviderDeliveryModelTests {
    struct Faults {
        var refusedStream = 0.0
        var resetStream = 0.0
        var stall = 0.0
        var tooManyRequests = 0.0
        var serviceUnavailable = 0.0
        var goawayPerRequest = 0.0
        var lostConnectionPerStep = 0.0
        var connectFailure = 0.0
        var badEvery = 0
        var unregisteredEvery = 0
        var maximumDelay = 5
    }

    /// The pool's shared queue, as ProviderWorkQueue keeps it (pure: one thread in the model).
    struct SharedQueue {
        var next: UInt64 = 1
        let count: Int
        var retries: [ProviderEntry] = []
        var outstanding = 0

        mutating func take(_ maximum: Int, now: Duration) -> (entries: [ProviderEntry], exhausted: Bool) {
            var taken: [ProviderEntry] = []
            var index = 0
            while index < retries.count, taken.count < maximum {
                if (retries[index].notBefore ?? .zero) <= now {
                    taken.append(retries.remove(at: index))
                } else {
                    index += 1
                }
            }
            while taken.count < maximum, next <= UInt64(count) {
                taken.append(ProviderConnectionMachineTests.entry(next))
                next += 1
                outstanding += 1
            }
            return (taken, taken.isEmpty && next > UInt64(count) && outstanding == 0)
        }
    }

    /// One connection as the model server sees it.
    struct ServerConnection {
        struct Pending {
            var position: UInt64
            var dueStep: Int
        }
        var streams: [Int32: Pending] = [:]
        var alive = true
    }

    struct Outcome {
        var report: ProviderSendReport
        var delivered: [Int]
        var bad: Set<Int>
    }

    static func run(count: Int, slots: Int, faults: Faults, seed: UInt64) -> Outcome {
        var random = SplitMix64(seed: seed)
        func chance(_ p: Double) -> Bool { p > 0 && Double(random.next() % 1_000_000) / 1_000_000 < p }
        let bad = faults.badEvery > 0 ? Set(stride(from: faults.badEvery, through: count, by: faults.badEvery)) : []
        let unregistered =
            faults.unregisteredEvery > 0
            ? Set(stride(from: faults.unregisteredEvery, through: count, by: faults.unregisteredEvery)) : []
        var configuration = ProviderConnectionMachine.Configuration()
        configuration.maximumStreams = 50
        configuration.maximumAttempts = 4
        configuration.requestTimeout = .milliseconds(40)
        configuration.retryDelay = Backoff(
            initialDelay: .milliseconds(5), multiplier: 2, maximumDelay: .milliseconds(20))
        configuration.reconnect = ReconnectPolicy(initialDelay: .milliseconds(2), maximumConsecutiveFailures: 1000)
        var machines = (0..<slots).map { ProviderConnectionMachine(configuration: configuration, connection: $0) }
        var servers = [ServerConnection?](repeating: nil, count: slots)
        var nextStream = [Int32](repeating: 1, count: slots)
        var finished = [Bool](repeating: false, count: slots)
        var queue = SharedQueue(count: count)
        var delivered = [Int](repeating: 0, count: count + 1)
        var step = 0

        func flush(_ slot: Int) {
            queue.retries.append(contentsOf: machines[slot].takeRequeued())
            queue.retries.sort { $0.position < $1.position }
            queue.outstanding -= machines[slot].takeFinalizedCount()
            _ = machines[slot].takeEvents()
        }

        /// The model server processes (or not) and answers a stream.
        func answer(_ slot: Int, _ stream: Int32, _ pending: ServerConnection.Pending, now: Duration) {
            let position = Int(pending.position)
            if chance(faults.resetStream) {
                if chance(0.5) { delivered[position] += 1 }  // processed, then reset: the answer is lost
                machines[slot].streamClosed(stream, errorCode: .internalError, now: now)
            } else if chance(faults.refusedStream) {
                machines[slot].streamClosed(stream, errorCode: .refusedStream, now: now)
            } else if bad.contains(position) {
                machines[slot].received(ProviderResponse(rejecting: .badDeviceToken), on: stream, now: now)
            } else if unregistered.contains(position) {
                machines[slot].received(
                    ProviderResponse(rejecting: .unregistered, timestamp: 1_700_000_000_000), on: stream, now: now)
            } else if chance(faults.tooManyRequests) {
                machines[slot].received(ProviderResponse(rejecting: .tooManyRequests), on: stream, now: now)
            } else if chance(faults.serviceUnavailable) {
                machines[slot].received(ProviderResponse(rejecting: .serviceUnavailable), on: stream, now: now)
            } else {
                delivered[position] += 1
                machines[slot].received(.success(apnsID: nil), on: stream, now: now)
            }
        }

        while finished.contains(false), step < 200_000 {
            step += 1
            let now = Duration.milliseconds(step)
            for slot in 0..<slots where !finished[slot] {
                // The server's side first: due answers, random losses.
                if var server = servers[slot] {
                    if chance(faults.lostConnectionPerStep) {
                        for pending in server.streams.values where chance(0.5) { delivered[Int(pending.position)] += 1 }
                        servers[slot] = nil
                        machines[slot].connectionLost(LegacyAPNsError(.connectionFailed, "model reset"), now: now)
                        flush(slot)
                        continue
                    }
                    for (stream, pending) in server.streams.sorted(by: { $0.key < $1.key })
                    where pending.dueStep <= step {
                        server.streams[stream] = nil
                        answer(slot, stream, pending, now: now)
                    }
                    servers[slot] = server
                }
                // The machine's turn: a few actions per step.
                for _ in 0..<60 {
                    let action = machines[slot].nextAction(now: now)
                    defer { flush(slot) }
                    switch action {
                    case .connect:
                        if chance(faults.connectFailure) {
                            machines[slot].connectFailed(LegacyAPNsError(.connectionFailed, "refused"), now: now)
                        } else {
                            servers[slot] = ServerConnection()
                            nextStream[slot] = 1
                            machines[slot].connected(now: now, serverStreamLimit: 100)
                        }
                    case .take(let maximum):
                        let (entries, exhausted) = queue.take(maximum, now: now)
                        if !entries.isEmpty {
                            machines[slot].took(entries, now: now)
                        } else if exhausted {
                            machines[slot].inputExhausted()
                        } else {
                            machines[slot].nothingToTake(retryAt: queue.retries.compactMap(\.notBefore).min(), now: now)
                        }
                    case .mintToken:
                        machines[slot].tokenMinted(now: now)
                    case .submit(let entry):
                        let stream = nextStream[slot]
                        nextStream[slot] += 2
                        machines[slot].submitted(entry, stream: stream, now: now)
                        if chance(faults.goawayPerRequest), var server = servers[slot] {
                            // GOAWAY naming an earlier stream: the later ones are never processed.
                            let last = stream - 2 * Int32(random.next() % 4)
                            for id in server.streams.keys where id > last { server.streams[id] = nil }
                            servers[slot] = server
                            let goaway = [UInt8](#"{"reason":"Shutdown"}"#.utf8).withUnsafeBytes {
                                ProviderGoaway(lastStreamID: last, errorCode: .noError, debugData: $0)
                            }
                            machines[slot].receivedGoaway(goaway, now: now)
                            if stream > last { continue }
                        }
                        let due =
                            chance(faults.stall) ? Int.max : step + Int(random.next() % UInt64(faults.maximumDelay + 1))
                        // A stalled request may have been processed, and is never answered.
                        if due == Int.max, chance(0.5) { delivered[Int(entry.position)] += 1 }
                        servers[slot]?.streams[stream] = .init(position: entry.position, dueStep: due)
                    case .cancel(let stream):
                        servers[slot]?.streams[stream] = nil
                    case .ping:
                        machines[slot].pingAcknowledged(now: now)
                    case .wait:
                        break
                    case .close:
                        servers[slot] = nil
                        machines[slot].closed()
                    case .finished:
                        finished[slot] = true
                    }
                    if case .wait = action { break }
                    if finished[slot] { break }
                }
            }
        }
        var report = ProviderSendReport()
        for machine in machines { report.merge(machine.report) }
        for entry in queue.retries {
            report.unconfirmed.append(
                ProviderUnconfirmed(
                    position: entry.position, request: entry.request, mayHaveBeenDelivered: entry.possiblyDelivered,
                    why: "left"))
        }
        report.sent = Int(queue.next - 1)
        #expect(!finished.contains(false), "the model send did not finish")
        return Outcome(report: report, delivered: delivered, bad: bad)
    }

    /// Nothing lost, nothing silently duplicated, one bucket each.
    static func checkLedger(_ outcome: Outcome, count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let report = outcome.report
        #expect(report.sent == count, sourceLocation: sourceLocation)
        let rejected = Set(report.rejected.map { Int($0.position) })
        let unconfirmed = Set(report.unconfirmed.map { Int($0.position) })
        #expect(rejected.count == report.rejected.count, "rejected twice", sourceLocation: sourceLocation)
        #expect(unconfirmed.count == report.unconfirmed.count, "unconfirmed twice", sourceLocation: sourceLocation)
        #expect(rejected.isDisjoint(with: unconfirmed), sourceLocation: sourceLocation)
        #expect(report.accepted + rejected.count + unconfirmed.count == count, sourceLocation: sourceLocation)
        let mayHaveBeenDelivered = Set(report.rejected.filter(\.mayHaveBeenDelivered).map { Int($0.position) })
        let duplicates = Set(report.possiblyDuplicated.map { Int($0.position) })
        var extra = 0
        for position in 1...count {
            let times = outcome.delivered[position]
            if rejected.contains(position) {
                #expect(
                    times == 0 || mayHaveBeenDelivered.contains(position), "rejected #\(position) was delivered",
                    sourceLocation: sourceLocation)
            } else if unconfirmed.contains(position) {
                let entry = report.unconfirmed.first { $0.position == UInt64(position) }!
                #expect(
                    times == 0 || entry.mayHaveBeenDelivered, "#\(position) reported as not sent was delivered",
                    sourceLocation: sourceLocation)
            } else {
                #expect(times >= 1, "accepted #\(position) was never delivered", sourceLocation: sourceLocation)
            }
            if times > 1 {
                #expect(
                    duplicates.contains(position), "#\(position) delivered \(times) times silently",
                    sourceLocation: sourceLocation)
                extra += times - 1
            }
        }
        #expect(extra <= report.possibleDuplicates, sourceLocation: sourceLocation)
        for position in outcome.bad { #expect(rejected.contains(position) || unconfirmed.contains(position)) }
    }

    @Test func rejectionsRefusedStreamsAndRateLimitsLoseAndDuplicateNothing() {
        let faults = Faults(
            refusedStream: 0.05, tooManyRequests: 0.02, serviceUnavailable: 0.02, badEvery: 97, unregisteredEvery: 89)
        for seed in UInt64(1)...10 {
            let outcome = Self.run(count: 1_500, slots: 2, faults: faults, seed: seed)
            Self.checkLedger(outcome, count: 1_500)
            #expect(outcome.report.possibleDuplicates == 0)
            #expect(outcome.delivered.dropFirst().allSatisfy { $0 <= 1 })
        }
    }

    @Test func goawaysLostConnectionsResetsAndStallsNeverLoseAndNeverSilentlyDuplicate() {
        let faults = Faults(
            refusedStream: 0.02, resetStream: 0.01, stall: 0.005, tooManyRequests: 0.01, serviceUnavailable: 0.01,
            goawayPerRequest: 0.003, lostConnectionPerStep: 0.002, connectFailure: 0.05, badEvery: 151,
            unregisteredEvery: 0)
        var sawDuplicates = false
        for seed in UInt64(1000)...1015 {
            let outcome = Self.run(count: 1_500, slots: 3, faults: faults, seed: seed)
            Self.checkLedger(outcome, count: 1_500)
            sawDuplicates = sawDuplicates || outcome.report.possibleDuplicates > 0
        }
        #expect(sawDuplicates, "the faults should have forced some at-least-once resends")
    }
}
