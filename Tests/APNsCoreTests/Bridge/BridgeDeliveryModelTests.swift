import APNsCore
import Testing

/// A legacy sender, the bridge's admission rule (``BridgeSenderState``) per connection, its
/// resend memory journaled into a model store, and an upstream that answers in random order, all
/// in memory: whatever the order, the faults and the window, every good notification is
/// delivered, every bad one is reported to the sender exactly once and never delivered, and
/// nothing is lost. Without crashes nothing is delivered twice; with the bridge killed at random
/// moments (its memory rebuilt from what the store committed), a notification delivered twice is
/// always one somebody reported as a possible duplicate: the sender (it was in flight on the
/// connection that went silent) or the restarted bridge (its earlier copy was orphaned).
@Suite struct BridgeDeliveryModelTests {
    /// The world: one sender, its connections through the bridge, one upstream, the store.
    struct World {
        var random: SplitMix64
        let count: Int
        let bad: Set<UInt32>
        let window: Int
        /// A fraction of upstream answers (per thousand) that are "unavailable" (not delivered).
        let unavailablePerMille: UInt64
        /// Chance (per ten thousand steps) that the bridge process dies.
        let crashPerTenThousand: UInt64

        var memory: BridgeResendMemory
        /// What the store has committed of the memory's journal, and what is queued for it.
        var stored: [BridgeResendKey: BridgeVerdict?] = [:]
        var queued: [BridgeResendMemory.Change] = []
        /// Deliveries per identifier upstream.
        var delivered: [UInt32: Int] = [:]
        /// Rejections the sender heard (identifier → times).
        var heardRejected: [UInt32: Int] = [:]
        /// Notifications someone reported as possible duplicates.
        var reportedBySender: Set<UInt32> = []
        var reportedByBridge: Set<UInt32> = []
        var crashes = 0
        /// Tests: a restarted bridge starts with an empty memory, as before the store kept it.
        var forgetsOnCrash = false
        /// Notifications in flight upstream: (connection, sequence, identifier).
        var upstream: [(connection: Int, sequence: UInt64, identifier: UInt32)] = []
        /// Every connection so far (old ones keep receiving late verdicts).
        var states: [BridgeSenderState] = []
        /// Connections of the bridge process now running start here (a crash ends the others).
        var firstLiveConnection = 0
        /// Resends held for an earlier copy: waiter tag → (connection, sequence, identifier).
        var held: [UInt64: (connection: Int, sequence: UInt64, identifier: UInt32)] = [:]
        var admissions: [BridgeSenderState.Admission] = []

        init(
            seed: UInt64, count: Int, bad: Set<UInt32>, window: Int, unavailablePerMille: UInt64,
            crashPerTenThousand: UInt64 = 0
        ) {
            random = SplitMix64(seed: seed)
            self.count = count
            self.bad = bad
            self.window = window
            self.unavailablePerMille = unavailablePerMille
            self.crashPerTenThousand = crashPerTenThousand
            memory = Self.newMemory()
        }

        static func newMemory() -> BridgeResendMemory {
            var configuration = BridgeResendMemory.Configuration()
            configuration.journals = true
            return BridgeResendMemory(configuration: configuration)
        }

        static let token = try! DeviceToken(bytes: [UInt8](repeating: 7, count: 32))
        static let translation = BridgeTranslation(fixedTopic: "com.example.app", usesTokens: false, run: 1)

        static func key(_ identifier: UInt32) -> BridgeResendKey {
            BridgeResendKey(identifier: identifier, digest: UInt128(identifier) << 7 | 0x55)
        }

        static func frame(_ identifier: UInt32) -> BridgeSenderState.Frame {
            BridgeSenderState.Frame(
                notification: PushNotification(
                    token: token, payload: try! Payload(json: "{\"aps\":{\"alert\":\"\(identifier)\"}}"),
                    identifier: identifier),
                command: .enhanced, key: key(identifier))
        }

        static func tag(_ connection: Int, _ sequence: UInt64) -> UInt64 { UInt64(connection) << 32 | sequence }

        /// The store commits what is queued (the bridge's store thread, at a time of its own).
        mutating func commit() {
            for change in queued {
                switch change {
                case .stored(let key, let verdict): stored[key] = .some(verdict)
                case .forgotten(let key): stored[key] = nil
                }
            }
            queued.removeAll()
        }

        mutating func drain() { memory.drainJournal { queued.append(contentsOf: $0) } }

        mutating func settle(_ connection: Int, _ sequence: UInt64, _ verdict: BridgeVerdict) {
            guard connection >= firstLiveConnection else { return }  // its bridge is gone
            let aftermath = states[connection].settle(sequence: sequence, verdict: verdict)
            Self.checkActionDue(states[connection].machine)
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
            drain()
            for waiter in resolution.waiters {
                guard let waiting = held.removeValue(forKey: waiter), waiting.connection >= firstLiveConnection else {
                    continue
                }
                if let verdict = resolution.verdict {
                    settle(waiting.connection, waiting.sequence, verdict)
                } else if let request = states[waiting.connection].releaseHeld(sequence: waiting.sequence) {
                    #expect(request.identifier == waiting.identifier)
                    if states[waiting.connection].machine.willAnswer {
                        upstream.append(waiting)
                    } else {
                        // Its sender was answered: the next copy goes, not this one (as the bridge does).
                        settle(waiting.connection, waiting.sequence, .unavailable(reason: "resent"))
                    }
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

        /// The bridge process dies: its connections close without a word, what it had upstream
        /// may or may not be delivered (nobody hears), and what its store had not committed is
        /// lost. The restarted bridge's memory is what the store kept, pending entries orphaned.
        mutating func crash() {
            crashes += 1
            for (_, _, identifier) in upstream where !bad.contains(identifier) && random.next() % 2 == 0 {
                delivered[identifier, default: 0] += 1
            }
            upstream.removeAll()
            held.removeAll()
            queued.removeAll()
            firstLiveConnection = states.count
            if forgetsOnCrash { stored.removeAll() }
            memory = Self.newMemory()
            memory.restore(
                stored.map { BridgeResendMemory.Record(key: $0.key, verdict: $0.value, age: .zero) }, now: .zero)
        }

        /// Admits one frame on `connection`, as the session does for one read.
        mutating func admit(_ identifier: UInt32, on connection: Int) {
            admissions.removeAll(keepingCapacity: true)
            // Taken out of `self` for the call (the state is `self`'s too), without copying it.
            var memory = BridgeResendMemory()
            swap(&memory, &self.memory)
            states[connection].admit(
                [Self.frame(identifier)], malformed: nil,
                recall: { key, sequence in memory.recall(key, waiter: Self.tag(connection, sequence), now: .zero) },
                translate: { Self.translation.request(for: $0.notification, connection: 0, senderTopic: nil) },
                into: &admissions)
            swap(&memory, &self.memory)
            drain()
            switch admissions.first {
            case .dropped?, nil:
                Issue.record("a frame admitted with room was dropped")
            case .refused?:
                Issue.record("a valid frame was refused")
            case .answered?:
                break  // settled by the admission itself
            case .held(let sequence)?:
                held[Self.tag(connection, sequence)] = (connection, sequence, identifier)
            case .forwarded(let sequence, let request, let possibleDuplicate)?:
                #expect(request.identifier == identifier)
                if possibleDuplicate { reportedByBridge.insert(identifier) }
                upstream.append((connection, sequence, identifier))
            }
        }

        /// The sender's whole job: send 1...count, and after each error response resend what
        /// followed the named notification (dropping the named one when it was rejected); after
        /// a close without a word, resend what it had sent on that connection, as possible
        /// duplicates (what `legacy-push send` does).
        mutating func run() {
            var next: UInt32 = 1
            var rounds = 0
            while next <= UInt32(count) {
                rounds += 1
                precondition(rounds < 100_000, "no progress")
                // The bridge may also die while the sender reconnects, before it sent anything.
                if random.next() % 10_000 < crashPerTenThousand * 10 { crash() }
                var configuration = BridgeSenderMachine.Configuration()
                configuration.window = window
                states.append(BridgeSenderState(configuration: configuration))
                let connection = states.count - 1
                var cursor = next
                var answered: BridgeSenderMachine.Answer?
                var crashed = false
                while answered == nil {
                    // The sender writes as long as the bridge admits (and it has something).
                    while cursor <= UInt32(count), states[connection].machine.canAdmit, random.next() % 4 != 0 {
                        admit(cursor, on: connection)
                        cursor += 1
                    }
                    Self.checkActionDue(states[connection].machine)
                    var remembered = false
                    let action = states[connection].nextAction { answer in
                        memory.remember(answer, now: .zero)
                        remembered = true
                    }
                    if case .answer(let answer) = action {
                        // The bridge answers only once the store has what the answer relies on.
                        if remembered {
                            drain()
                            commit()
                        }
                        answered = answer
                        break
                    }
                    if cursor > UInt32(count), states[connection].machine.outstanding == 0 { break }
                    if random.next() % 10_000 < crashPerTenThousand {
                        crash()
                        crashed = true
                        break
                    }
                    if random.next() % 100 == 0 { commit() }  // the store thread, now and then
                    if !upstream.isEmpty, random.next() % 3 != 0 { answerOne() }
                }
                if crashed {
                    // Silence: everything sent on this connection is unconfirmed, sent again.
                    for identifier in next..<cursor { reportedBySender.insert(identifier) }
                    continue
                }
                guard let answer = answered else {
                    next = cursor  // everything sent was delivered
                    continue
                }
                guard let response = answer.response else {
                    // A close without a word: the upstream failed before anything on this
                    // connection was delivered (no identifier to name). The sender resends all of
                    // it; what was delivered after the failure is answered from memory.
                    #expect(states[connection].machine.lastDeliveredIdentifier == nil)
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

    static func badIdentifiers(seed: UInt64, count: Int) -> Set<UInt32> {
        var picker = SplitMix64(seed: seed &* 7919)
        var bad = Set<UInt32>()
        while bad.count < count { bad.insert(UInt32(1 + picker.next() % 1000)) }
        return bad
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
        let bad = Self.badIdentifiers(seed: seed, count: badCount)
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

    /// The bridge killed at random moments, restarted on its store: nothing lost, every bad one
    /// heard once, and every second delivery reported by someone.
    @Test(arguments: [
        (seed: 21, window: 1000, bad: 30, unavailable: 0), (seed: 22, window: 50, bad: 60, unavailable: 20),
        (seed: 23, window: 300, bad: 100, unavailable: 5), (seed: 24, window: 7, bad: 20, unavailable: 50),
        (seed: 25, window: 500, bad: 80, unavailable: 0), (seed: 26, window: 100, bad: 10, unavailable: 100),
    ])
    func aCrashedBridgeRestartedOnItsStoreDuplicatesNothingSilently(
        seed: UInt64, window: Int, bad badCount: Int, unavailable: UInt64
    ) {
        let bad = Self.badIdentifiers(seed: seed, count: badCount)
        var world = World(
            seed: seed, count: 1000, bad: bad, window: window, unavailablePerMille: unavailable,
            crashPerTenThousand: 30)
        world.run()
        #expect(world.crashes > 0)
        for identifier in UInt32(1)...1000 {
            if bad.contains(identifier) {
                #expect(world.delivered[identifier] == nil, "bad \(identifier) was delivered")
                #expect(
                    world.heardRejected[identifier] == 1,
                    "bad \(identifier) heard \(world.heardRejected[identifier] ?? 0) times")
            } else {
                let times = world.delivered[identifier] ?? 0
                #expect(times >= 1, "\(identifier) was never delivered")
                if times > 1 {
                    #expect(
                        world.reportedBySender.contains(identifier) || world.reportedByBridge.contains(identifier),
                        "\(identifier) delivered \(times) times, reported by nobody")
                }
            }
        }
    }

    /// Without the store (a restarted bridge with an empty memory) the same crashes do deliver
    /// notifications twice that nobody reports: what the store is for.
    @Test func withoutTheStoreACrashDuplicatesSilently() {
        var silent = 0
        for seed: UInt64 in 31...36 {
            let bad = Self.badIdentifiers(seed: seed, count: 60)
            var world = World(
                seed: seed, count: 1000, bad: bad, window: 300, unavailablePerMille: 0, crashPerTenThousand: 30)
            world.forgetsOnCrash = true
            world.run()
            for identifier in UInt32(1)...1000 where (world.delivered[identifier] ?? 0) > 1 {
                if !world.reportedBySender.contains(identifier), !world.reportedByBridge.contains(identifier) {
                    silent += 1
                }
            }
        }
        #expect(silent > 0)
    }
}
