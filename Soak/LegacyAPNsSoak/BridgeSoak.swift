// The bridge path of the soak test (`--bridge`): our binary PushClient sends through an
// in-process Bridge to an in-process ProviderSimulator with random upstream faults (GOAWAY,
// resets, 503, stalls) and random bad tokens (BadDeviceToken) and uninstalled apps (410), and a
// ledger proves, per notification, that it was delivered upstream exactly once (the simulator's
// recorder), or rejected to the sender with its status, or stored for the feedback service (410),
// or reported (unconfirmed to the sender, or `notDelivered` by the bridge); and that every
// delivery beyond the first is named (`BridgeEvent.possibleDuplicate`, or the sender's own
// possible-duplicate list).
import APNsCredentials
import APNsRuntime
import Foundation
import GatewaySimulator
import HTTP2Client
import LegacyAPNs
import LegacyBridge
import ProcessHarness
import Synchronization

enum BridgeSoak {
    /// The fixture certificates: the CA of both sides, the identity the bridge and the simulator
    /// show, the sender's certificate, and the `.p8` key of the upstream's token auth.
    struct Credentials: Sendable {
        var ca: [Certificate]
        var serverIdentity: ClientIdentity
        var clientIdentity: ClientIdentity
        var key: SigningKey
        /// The folder of the fixture certificates (for `legacy-push bridge` in the kill phase).
        var folder: String
    }

    /// Counts 200 answers per notification (the token's last 4 bytes hold its index).
    final class Recorder: ProviderRecorder {
        private let counts: Mutex<[UInt16]>

        init(count: Int) { counts = Mutex([UInt16](repeating: 0, count: count)) }

        func record(_ requests: [AcceptedRequest]) {
            counts.withLock { counts in
                for accepted in requests { counts[LedgerRecorder.index(of: accepted.request.deviceToken)] &+= 1 }
            }
        }

        func flush() {}

        var snapshot: [UInt16] { counts.withLock { $0 } }
    }

    /// What the bridge said about single notifications, by index.
    struct Heard {
        var possibleDuplicates: [Int: Int] = [:]
        var notDelivered: Set<Int> = []
        var unregistered: Set<Int> = []
        var acknowledgedResends = 0
        var upstreamEvents = 0
    }

    struct Phase {
        var name: String
        var count: Int
        var connections: Int
        var faults: ProviderFaults.RandomFaults
        /// When above 0: the bridge is `legacy-push bridge` in a child process, killed (SIGKILL)
        /// this many times at random moments and restarted on the same store and port.
        var kills = 0
        /// The fleet: two `legacy-push bridge` processes on one PostgreSQL database behind
        /// HAProxy; each kill takes a bridge drawn at random.
        var fleet = false
    }

    /// Per phase, how many of each outcome and of each ledger failure.
    struct Tally {
        var sent = 0
        var delivered = 0
        var rejected = 0
        var unregistered = 0
        var unconfirmed = 0
        var notDelivered = 0
        var named = 0
        var lost = 0
        var silent = 0
        var wrong = 0
        var seconds = 0.0
        var failure: String?

        var holds: Bool { lost == 0 && silent == 0 && wrong == 0 && failure == nil }

        mutating func add(_ other: Tally) {
            sent += other.sent
            delivered += other.delivered
            rejected += other.rejected
            unregistered += other.unregistered
            unconfirmed += other.unconfirmed
            notDelivered += other.notDelivered
            named += other.named
            lost += other.lost
            silent += other.silent
            wrong += other.wrong
            seconds += other.seconds
            if failure == nil { failure = other.failure }
        }
    }

    /// Runs the phases; returns whether the ledger held in every one. `badRate` and `goneRate`:
    /// the share of notifications to tokens the simulator answers 400 BadDeviceToken and 410.
    /// `fleet`: every phase runs on a fleet (two bridges on one PostgreSQL database behind
    /// HAProxy), each killed and restarted at random moments (at least twice per phase).
    static func run(
        total: Int, seed: UInt64, badRate: Double, goneRate: Double, upstreamFaults: Bool, fleet: Bool = false,
        credentials: Credentials
    ) async throws -> Bool {
        let share = total / 6
        var phases = [
            Phase(
                name: "GOAWAY and 503", count: share, connections: 1,
                faults: .init(seed: seed &+ 11, goaway: 0.0005, serviceUnavailable: 0.002)),
            Phase(name: "resets", count: share, connections: 1, faults: .init(seed: seed &+ 12, reset: 0.0002)),
            Phase(name: "stalls", count: share, connections: 1, faults: .init(seed: seed &+ 13, stall: 0.0001)),
            // Answers lost to resets, then retries answered 503: what the sender resends may have
            // been delivered, and each such delivery must be named (an adversarial run found 20 to
            // 33 silent ones per 20,000 with this mix).
            Phase(
                name: "resets and 503", count: share, connections: 1,
                faults: .init(seed: seed &+ 15, reset: 0.005, serviceUnavailable: 0.01)),
            // A crash is no clean stop: the process dies with verdicts outstanding and senders
            // unanswered; the restarted one starts from the resend memory its store kept.
            Phase(
                name: "kill -9 and restart", count: share, connections: 1,
                faults: .init(seed: seed &+ 16, reset: 0.0002, serviceUnavailable: 0.001), kills: 4),
            Phase(
                name: "everything, 2 sender connections", count: total - 5 * share, connections: 2,
                faults: .init(
                    seed: seed &+ 14, goaway: 0.0003, reset: 0.0001, serviceUnavailable: 0.001, stall: 0.00005)),
        ]
        if !upstreamFaults {
            for index in phases.indices { phases[index].faults = .init(seed: phases[index].faults.seed) }
        }
        if fleet {
            for index in phases.indices {
                phases[index].fleet = true
                phases[index].kills = max(phases[index].kills, 2)
            }
        }
        print(
            "LegacyAPNs bridge soak: \(total) notifications in \(phases.count) phases, seed \(seed): PushClient -> "
                + "Bridge -> ProviderSimulator (token auth), \(100 * badRate) % bad tokens and \(100 * goneRate) % "
                + "uninstalled apps in each phase\(upstreamFaults ? "" : ", no random upstream faults")"
                + (fleet ? "; each phase on a fleet: two bridges on PostgreSQL behind HAProxy, killed at random" : ""))
        print(
            "phase                             sent    once    rejected 410  unconf notdel named-dup lost silent-dup wrong  seconds"
        )
        var totals = Tally()
        for (number, phase) in phases.enumerated() {
            let tally = try await run(
                phase, number: number, badRate: badRate, goneRate: goneRate, credentials: credentials)
            totals.add(tally)
            print(line(phase.name, tally))
        }
        print(line("total", totals))
        print(
            totals.holds
                ? "bridge soak passed: every notification delivered once, rejected, stored (410) or reported; "
                    + "every extra delivery named"
                : "BRIDGE SOAK FAILED")
        return totals.holds
    }

    static func line(_ name: String, _ tally: Tally) -> String {
        func cell(_ value: Int, _ width: Int) -> String {
            String(value).padding(toLength: width, withPad: " ", startingAt: 0)
        }
        return name.padding(toLength: 34, withPad: " ", startingAt: 0) + cell(tally.sent, 8) + cell(tally.delivered, 8)
            + cell(tally.rejected, 9) + cell(tally.unregistered, 5) + cell(tally.unconfirmed, 7)
            + cell(tally.notDelivered, 7) + cell(tally.named, 10) + cell(tally.lost, 5) + cell(tally.silent, 11)
            + cell(tally.wrong, 7) + String(format: "%.1f", tally.seconds)
            + (tally.holds ? "" : "  FAILED" + (tally.failure.map { ": \($0)" } ?? ""))
    }

    static func token(phase: Int, index: Int) -> DeviceToken {
        var bytes = [UInt8](repeating: 0x60 &+ UInt8(phase), count: 32)
        withUnsafeBytes(of: UInt32(index).bigEndian) { bytes.replaceSubrange(28..<32, with: $0) }
        return try! DeviceToken(bytes: bytes)
    }

    static func run(
        _ phase: Phase, number: Int, badRate: Double, goneRate: Double, credentials: Credentials
    ) async throws -> Tally {
        let ca = credentials.ca
        let serverIdentity = credentials.serverIdentity
        let clientIdentity = credentials.clientIdentity
        let key = credentials.key
        // Bad and uninstalled tokens, drawn from the phase's seed.
        var generator = SplitMix(seed: phase.faults.seed &* 31)
        var bad = Set<Int>()
        var gone = Set<Int>()
        for index in 1...phase.count {
            let draw = generator.nextUnit()
            if draw < badRate { bad.insert(index) } else if draw < badRate + goneRate { gone.insert(index) }
        }

        let recorder = Recorder(count: phase.count + 1)
        var upstreamConfiguration = ProviderSimulator.Configuration(identity: serverIdentity, clientTrust: ca)
        upstreamConfiguration.authKeys = [.init(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", publicKey: key.publicKey)]
        upstreamConfiguration.recorder = recorder
        upstreamConfiguration.faults.random = phase.faults
        for index in bad {
            upstreamConfiguration.faults.failingTokens[token(phase: number, index: index)] = .badDeviceToken
        }
        for index in gone {
            upstreamConfiguration.faults.unregisteredTokens[token(phase: number, index: index)] = .milliseconds(
                1_767_225_600_000 + UInt64(index))
        }
        let simulator = try ProviderSimulator(configuration: upstreamConfiguration)
        let upstreamEndpoint = try await simulator.start()

        let folder = NSTemporaryDirectory() + "/legacy-push-bridge-soak-\(getpid())-\(number)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var upstream = ProviderClient.Configuration(
            server: .custom(upstreamEndpoint), credentials: .token(key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ"))
        upstream.trust = .certificates(ca)
        upstream.connections = 2
        upstream.delivery.requestTimeout = .seconds(2)
        upstream.delivery.maximumAttempts = 5
        upstream.delivery.retryDelay = Backoff(initialDelay: .milliseconds(10), maximumDelay: .milliseconds(200))
        upstream.delivery.reconnect = ReconnectPolicy(
            initialDelay: .milliseconds(5), multiplier: 2, maximumDelay: .milliseconds(100),
            maximumConsecutiveFailures: 20)
        var configuration = Bridge.Configuration(
            identity: serverIdentity, senderCAs: ca, upstream: upstream, storePath: folder + "/bridge.sqlite")
        configuration.port = 0
        configuration.feedbackPort = nil
        configuration.drainTimeout = .seconds(5)
        let heard = Mutex(Heard())
        configuration.events = { event in
            switch event {
            case .possibleDuplicate(_, _, let token):
                heard.withLock { $0.possibleDuplicates[LedgerRecorder.index(of: token), default: 0] += 1 }
            case .notDelivered(_, _, let token, _):
                heard.withLock { _ = $0.notDelivered.insert(LedgerRecorder.index(of: token)) }
            case .unregistered(_, let token, _):
                heard.withLock { _ = $0.unregistered.insert(LedgerRecorder.index(of: token)) }
            case .acknowledgedResend:
                heard.withLock { $0.acknowledgedResends += 1 }
            case .upstream:
                heard.withLock { $0.upstreamEvents += 1 }
            default:
                break
            }
        }
        var bridge: Bridge?
        var children: [BridgeProcess] = []
        var postgres: ThrowawayPostgres?
        var balancer: HAProxyFleet?
        defer {
            balancer?.stop()
            postgres?.stop()
        }
        let gateway: Endpoint
        if phase.fleet {
            let cluster = try ThrowawayPostgres()
            postgres = cluster
            let store = try cluster.database(prefix: "soak").uri
            children = try (0..<2).map {
                try BridgeProcess(
                    upstreamPort: upstreamEndpoint.port, certificates: credentials.folder, folder: folder, store: store,
                    name: "bridge\($0)")
            }
            for child in children { try child.start() }
            let template = URL(fileURLWithPath: credentials.folder).deletingLastPathComponent()
                .appendingPathComponent("haproxy/fleet.cfg.in").path
            let fleet = try HAProxyFleet(
                template: template, bridges: children.map { ($0.port, $0.feedbackPort) }, folder: folder)
            balancer = fleet
            gateway = Endpoint(host: "127.0.0.1", port: fleet.gateway)
        } else if phase.kills > 0 {
            let process = try BridgeProcess(
                upstreamPort: upstreamEndpoint.port, certificates: credentials.folder, folder: folder)
            try process.start()
            children = [process]
            gateway = Endpoint(host: "127.0.0.1", port: process.port)
        } else {
            let inProcess = try Bridge(configuration: configuration)
            gateway = try await inProcess.start().gateway
            bridge = inProcess
        }

        var clientConfiguration = PushClient.Configuration(
            gateway: .custom(host: gateway.host, port: gateway.port),
            tls: TLSConfiguration(identity: clientIdentity, trust: .certificates(ca)))
        clientConfiguration.connections = phase.connections
        clientConfiguration.delivery = .init(
            cacheCapacity: 20_000, maximumAttempts: 5,
            reconnect: ReconnectPolicy(
                initialDelay: .milliseconds(1), multiplier: 2, maximumDelay: .milliseconds(50),
                maximumConsecutiveFailures: 50))
        clientConfiguration.verdictTimeout = .seconds(30)
        let client = try PushClient(configuration: clientConfiguration)
        let notifications = (1...phase.count).map { index in
            PushNotification(
                token: token(phase: number, index: index),
                payload: Payload(unvalidatedBytes: Array(#"{"aps":{"alert":"bridge soak \#(index)"}}"#.utf8)),
                identifier: UInt32(index))
        }
        let started = Date()
        let sending = Task { await client.send(notifications) }
        if !children.isEmpty {
            // Killed at random moments spread over the phase (by deliveries so far), restarted on
            // the same store and port after a random pause; the sender reconnects meanwhile (in a
            // fleet, through the balancer to the other bridge).
            var draws = SplitMix(seed: phase.faults.seed &* 977)
            for kill in 1...phase.kills {
                let due = phase.count * kill / (phase.kills + 1) + Int(draws.next() % UInt64(phase.count / 20 + 1))
                let deadline = Date().addingTimeInterval(120)
                while recorder.snapshot.reduce(0, { $0 + Int($1) }) < due, Date() < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                let child = children[Int(draws.next() % UInt64(children.count))]
                child.kill()
                try await Task.sleep(for: .milliseconds(50 + Int(draws.next() % 400)))
                try child.start()
            }
        }
        let report = await sending.value
        if let bridge { await bridge.stop() }
        for child in children {
            child.stop()
            heard.withLock { heard in
                for (event, token) in child.events() {
                    let index = LedgerRecorder.index(of: token)
                    switch event {
                    case "possibleDuplicate": heard.possibleDuplicates[index, default: 0] += 1
                    case "notDelivered": heard.notDelivered.insert(index)
                    case "unregistered": heard.unregistered.insert(index)
                    default: break
                    }
                }
            }
        }
        await simulator.stop()
        let seconds = Date().timeIntervalSince(started)

        // The ledger.
        let delivered = recorder.snapshot
        let said = heard.withLock { $0 }
        var rejected: [Int: Rejection] = [:]
        for rejection in report.rejected { rejected[Int(rejection.identifier ?? 0)] = rejection }
        let unconfirmed = Set(report.unconfirmed.map { Int($0.notification.identifier ?? 0) })
        let senderDuplicates = Set(report.possiblyDuplicated.map { Int($0.identifier ?? 0) })
        var tally = Tally(sent: report.sent, seconds: seconds)
        var examples: [String] = []
        func wrong(_ text: String) {
            tally.wrong += 1
            if examples.count < 3 { examples.append(text) }
        }
        for index in 1...phase.count {
            let times = Int(delivered[index])
            let reported = unconfirmed.contains(index) || said.notDelivered.contains(index)
            if unconfirmed.contains(index) { tally.unconfirmed += 1 }
            if said.notDelivered.contains(index) { tally.notDelivered += 1 }
            let named = said.possibleDuplicates[index] != nil || senderDuplicates.contains(index)
            if times > 1 {
                if named { tally.named += times - 1 } else { tally.silent += times - 1 }
            }
            if bad.contains(index) {
                // Never delivered; the sender hears status 8 (or it was reported).
                if times > 0 { wrong("bad token #\(index) delivered \(times) times") }
                if let rejection = rejected[index] {
                    tally.rejected += 1
                    if rejection.status != .invalidToken {
                        wrong("bad token #\(index) rejected with \(rejection.status)")
                    }
                } else if !reported {
                    wrong("bad token #\(index) neither rejected nor reported")
                }
            } else if gone.contains(index) {
                // 410: never delivered, never an error for the sender, stored for the feedback service.
                if times > 0 { wrong("uninstalled #\(index) delivered") }
                if said.unregistered.contains(index) {
                    tally.unregistered += 1
                } else if !reported {
                    tally.lost += 1
                    if examples.count < 3 { examples.append("410 #\(index) neither stored nor reported") }
                }
                if rejected[index] != nil, !reported { wrong("uninstalled #\(index) rejected to the sender") }
            } else if let rejection = rejected[index] {
                // A good token is rejected only when the upstream gave up on it (status 10 path
                // ends as a rejection after the sender's attempts); it must not have been delivered.
                tally.rejected += 1
                if times > 0, !rejection.mayHaveBeenDelivered, !named {
                    wrong("#\(index) delivered and rejected (\(rejection.status))")
                }
            } else if times == 0 {
                if !reported {
                    tally.lost += 1
                    if examples.count < 3 { examples.append("#\(index) lost") }
                }
            } else {
                tally.delivered += 1
            }
        }
        let consistent =
            report.accepted + report.rejected.count + report.unconfirmed.count == report.sent
            && report.sent == phase.count
        if !consistent {
            tally.failure =
                "the sender's report does not add up: \(report.accepted) + \(report.rejected.count) + "
                + "\(report.unconfirmed.count) != \(report.sent) (of \(phase.count))"
        } else if let failure = report.failure {
            tally.failure = "the send stopped: \(failure.reason)"
        } else if !examples.isEmpty {
            tally.failure = examples.joined(separator: "; ")
        }
        let bridgeSaid =
            bridge.map { "bridge: \($0.statistics.description); \(said.upstreamEvents) upstream events" }
            ?? "\(phase.fleet ? "fleet of 2 bridges" : "bridge"): killed \(phase.kills) times and restarted"
        print(
            "  [\(phase.name)] sender: \(report.accepted) accepted, \(report.resent) resent, \(report.connections) "
                + "connections; \(bridgeSaid)")
        return tally
    }
}

/// A small seeded generator (SplitMix64), so the bad tokens are the same for the same seed.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
