import APNsCore
import Testing

/// A legacy sender, the bridge's per-connection machine and resend memory, and an upstream that
/// answers in random order, all in memory: whatever the order, the faults and the window, every
/// good notification is delivered exactly once, every bad one is reported to the sender exactly
/// once and never delivered, and nothing is lost.
@Suite struct BridgeDeliveryModelTests {
    /// The world: one sender, its connections through the bridge, one upstream.
    struct World {
        var random: SplitMix64
        let count: Int
        let bad: Set<UInt32>
        let window: Int
        /// A fraction of upstream answers (per thousand) that are "unavailable" (not delivered).
        let unavailablePerMille: UInt64

        var memory = BridgeResendMemory()
        /// Deliveries per identifier upstream.
        var delivered: [UInt32: Int] = [:]
        /// Rejections the sender heard (identifier → times).
        var heardRejected: [UInt32: Int] = [:]
        /// Notifications in flight upstream: (connection, sequence, identifier).
        var upstream: [(connection: Int, sequence: UInt64, identifier: UInt32)] = []
        /// The machines of every connection so far (old ones keep receiving late verdicts).
        var machines: [BridgeSenderMachine] = []
        /// Resends waiting for a pending entry: waiter tag → (connection, sequence, identifier).
        var held: [UInt64: (connection: Int, sequence: UInt64, identifier: UInt32)] = [:]

        init(seed: UInt64, count: Int, bad: Set<UInt32>, window: Int, unavailablePerMille: UInt64) {
            random = SplitMix64(seed: seed)
            self.count = count
            self.bad = bad
            self.window = window
            self.unavailablePerMille = unavailablePerMille
        }

        static let token = try! DeviceToken(bytes: [UInt8](repeating: 7, count: 32))

        static func key(_ identifier: UInt32) -> BridgeResendKey {
            BridgeResendKey(identifier: identifier, digest: UInt128(identifier) << 7 | 0x55)
        }

        static func tag(_ connection: Int, _ sequence: UInt64) -> UInt64 { UInt64(connection) << 32 | sequence }

        mutating func settle(_ connection: Int, _ sequence: UInt64, _ verdict: BridgeVerdict) {
            let aftermath = machines[connection].settle(sequence: sequence, verdict: verdict)
            Self.checkActionDue(machines[connection])
            handle(aftermath)
        }

        /// `hasActionDue` says what `nextAction()` would do, in every state the model reaches (the
        /// bridge wakes a session thread waiting for verdicts only when it says so).
        static func checkActionDue(_ machine: BridgeSenderMachine) {
            var copy = machine
            #expect(machine.hasActionDue == (copy.nextAction() != .none))
        }

        mutating func handle(_ aftermath: BridgeSenderMachine.Aftermath) {
            guard case .resolve(let key, let verdict) = aftermath else { return }
            let resolution = memory.resolve(key, verdict: verdict, now: .zero)
            for waiter in resolution.waiters {
                guard let waiting = held.removeValue(forKey: waiter) else { continue }
                if let verdict = resolution.verdict {
                    settle(waiting.connection, waiting.sequence, verdict)
                } else if machines[waiting.connection].willAnswer {
                    upstream.append(waiting)
                } else {
                    // Its sender was answered: the next copy goes, not this one (as the bridge does).
                    settle(waiting.connection, waiting.sequence, .unavailable(reason: "resent"))
                }
            }
        }

        /// One upstream verdict, for a random notification in flight.
        mutating func answerOne() {
            let index = Int(random.next() % UInt64(upstream.count))
            let (connection, sequence, identifier) = upstream.remove(at: index)
            let verdict: BridgeVerdict
            if bad.contains(identifier) {
                verdict = .rejected(.invalidToken, reason: "BadDeviceToken")
            } else if random.next() % 1000 < unavailablePerMille {
                verdict = .unavailable(reason: "upstream trouble")
            } else {
                delivered[identifier, default: 0] += 1
                verdict = .accepted
            }
            settle(connection, sequence, verdict)
        }

        /// The sender's whole job: send 1...count, and after each error response resend what
        /// followed the named notification (dropping the named one when it was rejected).
        mutating func run() {
            var next: UInt32 = 1
            var rounds = 0
            while next <= UInt32(count) {
                rounds += 1
                precondition(rounds < 100_000, "no progress")
                var configuration = BridgeSenderMachine.Configuration()
                configuration.window = window
                machines.append(BridgeSenderMachine(configuration: configuration))
                let connection = machines.count - 1
                var cursor = next
                var answered: BridgeSenderMachine.Answer?
                while answered == nil {
                    // The sender writes as long as the bridge admits (and it has something).
                    while cursor <= UInt32(count), machines[connection].canAdmit, random.next() % 4 != 0 {
                        let key = Self.key(cursor)
                        let sequence = machines[connection].admit(
                            identifier: cursor, command: .enhanced, token: Self.token, key: key)!
                        let tag = Self.tag(connection, sequence)
                        held[tag] = (connection, sequence, cursor)
                        switch memory.recall(key, waiter: tag, now: .zero) {
                        case .settled(let verdict):
                            held[tag] = nil
                            settle(connection, sequence, verdict)
                        case .pending:
                            break
                        case .unknown:
                            held[tag] = nil
                            upstream.append((connection, sequence, cursor))
                        }
                        cursor += 1
                    }
                    Self.checkActionDue(machines[connection])
                    if case .answer(let answer) = machines[connection].nextAction() {
                        for item in answer.settledAfter {
                            if let verdict = item.verdict { memory.remember(item.key, verdict: verdict, now: .zero) }
                        }
                        for item in answer.pendingAfter { memory.rememberPending(item.key) }
                        answered = answer
                        break
                    }
                    if cursor > UInt32(count), machines[connection].outstanding == 0 { break }
                    if !upstream.isEmpty, random.next() % 3 != 0 { answerOne() }
                }
                guard let answer = answered else {
                    next = cursor  // everything sent was delivered
                    continue
                }
                guard let response = answer.response else {
                    // A close without a word: the upstream failed before anything on this
                    // connection was delivered (no identifier to name). The sender resends all of
                    // it; what was delivered after the failure is answered from memory.
                    #expect(machines[connection].lastDeliveredIdentifier == nil)
                    continue
                }
                if response.status == .shutdown {
                    next = response.identifier + 1 < next ? next : response.identifier + 1
                } else {
                    heardRejected[response.identifier, default: 0] += 1
                    next = response.identifier + 1
                }
            }
            while !upstream.isEmpty { answerOne() }  // late verdicts of closed connections
        }
    }

    @Test(arguments: [
        (seed: 1, window: 1000, bad: 3, unavailable: 0), (seed: 2, window: 7, bad: 20, unavailable: 0),
        (seed: 3, window: 1, bad: 5, unavailable: 0), (seed: 4, window: 50, bad: 10, unavailable: 30),
        (seed: 5, window: 200, bad: 0, unavailable: 100), (seed: 6, window: 3, bad: 40, unavailable: 50),
        // Many failures in a wide window: resends waiting on copies still upstream get answered
        // themselves, often (what the bridge soak found).
        (seed: 7, window: 300, bad: 60, unavailable: 0), (seed: 8, window: 1000, bad: 100, unavailable: 20),
        (seed: 9, window: 100, bad: 30, unavailable: 100), (seed: 10, window: 500, bad: 80, unavailable: 5),
    ])
    func everyNotificationEndsInExactlyOnePlace(seed: UInt64, window: Int, bad badCount: Int, unavailable: UInt64) {
        var picker = SplitMix64(seed: seed &* 7919)
        var bad = Set<UInt32>()
        while bad.count < badCount { bad.insert(UInt32(1 + picker.next() % 1000)) }
        var world = World(seed: seed, count: 1000, bad: bad, window: window, unavailablePerMille: unavailable)
        world.run()
        for identifier in UInt32(1)...1000 {
            if bad.contains(identifier) {
                #expect(world.delivered[identifier] == nil, "bad \(identifier) was delivered")
                #expect(
                    world.heardRejected[identifier] == 1,
                    "bad \(identifier) was reported \(world.heardRejected[identifier] ?? 0) times")
            } else {
                #expect(
                    world.delivered[identifier] == 1,
                    "\(identifier) delivered \(world.delivered[identifier] ?? 0) times")
                #expect(world.heardRejected[identifier] == nil)
            }
        }
        // Resends after errors were answered from memory, not delivered again.
        if badCount > 0, window > 1 { #expect(world.memory.hits > 0) }
    }
}
