// The soak test: hundreds of thousands of notifications against the simulator with random faults
// (error responses with every status at random positions, status 10, silent closes, slow reads,
// error responses split across records), and a ledger proving that every notification ended up
// accepted (delivered at least once, and more than once only if reported as a possible duplicate),
// rejected (never delivered) or reported unconfirmed.
//
//     swift run -c release LegacyAPNsSoak [--notifications N] [--seed S] [--tls13]
//     swift run -c release LegacyAPNsSoak --bridge [--notifications N] [--seed S] [--bad-rate R]
//         [--gone-rate R] [--no-upstream-faults] [--fleet]
//
// --tls13 makes the simulator offer TLS 1.3 (it offers TLS 1.2 by default, as Apple's gateway).
// --bridge soaks the bridge instead (BridgeSoak.swift): PushClient -> Bridge -> ProviderSimulator
// with random upstream faults and bad tokens (default 400,000 notifications; --bad-rate and
// --gone-rate are the shares of tokens answered BadDeviceToken and 410, default 0.002 and 0.0005),
// and one phase where the bridge is `legacy-push bridge` in a child process, killed with SIGKILL
// and restarted on the same store (the binary must be built beside the soak: Scripts/soak.sh).
// --fleet (with --bridge) runs every phase on a fleet instead: two `legacy-push bridge` processes
// on one throwaway PostgreSQL database behind HAProxy, each phase killing bridges drawn at random
// (PostgreSQL 15 and HAProxy from Debian: Scripts/setup.sh --tests).
//
// Not part of `swift test` (it runs for minutes); Scripts/soak.sh runs it.
import APNsRuntime
import Foundation
import GatewaySimulator
import LegacyAPNs
import Synchronization

let arguments = CommandLine.arguments
func option(_ name: String, _ fallback: Int) -> Int {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return fallback }
    return Int(arguments[index + 1]) ?? fallback
}
let bridgePath = arguments.contains("--bridge")
let total = option("--notifications", bridgePath ? 400_000 : 500_000)
let seed = UInt64(option("--seed", 2195))
let newestTLS: TLSConfiguration.Version = arguments.contains("--tls13") ? .tls13 : .tls12

/// Counts deliveries per notification (the token's last 4 bytes hold its index).
final class LedgerRecorder: NotificationRecorder {
    private let counts: Mutex<[UInt16]>

    init(count: Int) { counts = Mutex([UInt16](repeating: 0, count: count)) }

    func record(_ frames: [Frame], connection: Int) {
        counts.withLock { counts in
            for frame in frames {
                guard case .notification(let notification, _) = frame else { continue }
                counts[Self.index(of: notification.token)] &+= 1
            }
        }
    }

    func flush() {}

    var snapshot: [UInt16] { counts.withLock { $0 } }

    static func index(of token: DeviceToken) -> Int {
        token.withUnsafeBytes { Int(UInt32(bigEndian: $0.loadUnaligned(fromByteOffset: 28, as: UInt32.self))) }
    }
}

struct Phase {
    var name: String
    var count: Int
    var connections: Int
    var faults: SimulatorFaults
}

/// The fixture certificates of the checkout this soak was built from.
let certificatesFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fixtures/certs").path

func bytes(_ name: String) throws -> [UInt8] {
    Array(try Data(contentsOf: URL(fileURLWithPath: certificatesFolder + "/" + name)))
}

func randomFaults(_ seed: UInt64, reject: Double = 0, processing: Double = 0, shutdown: Double = 0, silent: Double = 0)
    -> SimulatorFaults
{
    var faults = SimulatorFaults()
    faults.random = .init(
        seed: seed, reject: reject, processingError: processing, shutdown: shutdown, silentClose: silent)
    return faults
}

let share = total / 5
var slow = randomFaults(seed &+ 4, reject: 0.002)
slow.readDelay = .microseconds(500)
slow.splitErrorResponses = true
let phases = [
    Phase(
        name: "rejections, every status", count: share, connections: 1, faults: randomFaults(seed &+ 1, reject: 0.003)),
    Phase(
        name: "shutdowns and processing errors", count: share, connections: 1,
        faults: randomFaults(seed &+ 2, processing: 0.001, shutdown: 0.001)),
    Phase(name: "silent closes", count: share, connections: 1, faults: randomFaults(seed &+ 3, silent: 0.0005)),
    Phase(name: "slow reads, split error responses", count: share, connections: 1, faults: slow),
    Phase(
        name: "everything, 3 connections", count: total - 4 * share, connections: 3,
        faults: randomFaults(seed &+ 5, reject: 0.001, processing: 0.0005, shutdown: 0.0005, silent: 0.0003)),
]

let ca = Certificate.certificates(pemRepresentation: try bytes("ca.pem"))
let serverIdentity = try ClientIdentity(pem: try bytes("server.pem"), keyPEM: try bytes("server.key"), passphrase: nil)
let clientIdentity = try ClientIdentity(pkcs12: try bytes("universal-legacy.p12"), passphrase: "secret")
if bridgePath {
    let credentials = BridgeSoak.Credentials(
        ca: ca, serverIdentity: serverIdentity, clientIdentity: clientIdentity,
        key: try SigningKey(pemRepresentation: try bytes("AuthKey_ABC123DEFG.p8")), folder: certificatesFolder)
    func rate(_ name: String, _ fallback: Double) -> Double {
        guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return fallback }
        return Double(arguments[index + 1]) ?? fallback
    }
    let passed = try await BridgeSoak.run(
        total: total, seed: seed, badRate: rate("--bad-rate", 0.002), goneRate: rate("--gone-rate", 0.0005),
        upstreamFaults: !arguments.contains("--no-upstream-faults"), fleet: arguments.contains("--fleet"),
        credentials: credentials)
    exit(passed ? 0 : 1)
}

print(
    "LegacyAPNs soak: \(total) notifications in \(phases.count) phases, seed \(seed), "
        + "gateway offering \(newestTLS == .tls13 ? "TLS 1.3" : "TLS 1.2")")
print(
    "phase                                   sent     accepted rejected unconfirmed resent   dup.risk conns  lost silent-dup  seconds"
)
var failed = false
var totals = (sent: 0, accepted: 0, rejected: 0, unconfirmed: 0, resent: 0, duplicates: 0, lost: 0, silent: 0)
for (number, phase) in phases.enumerated() {
    let recorder = LedgerRecorder(count: phase.count + 1)
    var configuration = GatewaySimulator.Configuration(identity: serverIdentity, clientTrust: ca)
    configuration.port = 0
    configuration.feedbackPort = nil
    configuration.faults = phase.faults
    configuration.maximumTLSVersion = newestTLS
    configuration.recorder = recorder
    let simulator = try GatewaySimulator(configuration: configuration)
    let endpoints = try await simulator.start()

    var clientConfiguration = PushClient.Configuration(
        gateway: .custom(host: endpoints.gateway.host, port: endpoints.gateway.port),
        tls: TLSConfiguration(identity: clientIdentity, trust: .certificates(ca)))
    clientConfiguration.connections = phase.connections
    clientConfiguration.delivery = .init(
        cacheCapacity: 20_000, maximumAttempts: 3,
        reconnect: ReconnectPolicy(
            initialDelay: .milliseconds(1), multiplier: 2, maximumDelay: .milliseconds(50),
            maximumConsecutiveFailures: 50))
    let client = try PushClient(configuration: clientConfiguration)
    let notifications = (1...phase.count).lazy.map { index -> PushNotification in
        var token = [UInt8](repeating: 0x50 &+ UInt8(number), count: 32)
        withUnsafeBytes(of: UInt32(index).bigEndian) { token.replaceSubrange(28..<32, with: $0) }
        return PushNotification(
            token: try! DeviceToken(bytes: token),
            payload: Payload(unvalidatedBytes: Array(#"{"aps":{"alert":"soak \#(index)"}}"#.utf8)),
            identifier: UInt32(index))
    }
    let started = Date()
    let report = await client.send(Array(notifications))
    await simulator.stop()

    // The ledger.
    let delivered = recorder.snapshot
    let rejected = Set(report.rejected.map { Int($0.identifier!) })
    // A rejection after a silent close may follow a delivery by the closed connection; the
    // report says so (mayHaveBeenDelivered); such deliveries are allowed, extra ones are counted
    // as duplicates below.
    let rejectedAfterSilentClose = Set(report.rejected.filter(\.mayHaveBeenDelivered).map { Int($0.identifier!) })
    let unconfirmed = Set(report.unconfirmed.map { Int($0.notification.identifier!) })
    var lost = 0
    var extra = 0
    var rejectedButDelivered = 0
    for index in 1...phase.count {
        let times = Int(delivered[index])
        if rejected.contains(index) {
            if times > 0, !rejectedAfterSilentClose.contains(index) { rejectedButDelivered += 1 }
        } else if !unconfirmed.contains(index), times == 0 {
            lost += 1
        }
        extra += max(0, times - 1)
    }
    let silentDuplicates = max(0, extra - report.possibleDuplicates)
    let consistent =
        report.accepted + report.rejected.count + report.unconfirmed.count == report.sent
        && report.sent == phase.count && rejected.isDisjoint(with: unconfirmed)
    let ok = lost == 0 && silentDuplicates == 0 && rejectedButDelivered == 0 && consistent && report.failure == nil
    failed = failed || !ok
    print(
        phase.name.padding(toLength: 38, withPad: " ", startingAt: 0),
        String(report.sent).padding(toLength: 8, withPad: " ", startingAt: 0),
        String(report.accepted).padding(toLength: 8, withPad: " ", startingAt: 0),
        String(report.rejected.count).padding(toLength: 8, withPad: " ", startingAt: 0),
        String(report.unconfirmed.count).padding(toLength: 11, withPad: " ", startingAt: 0),
        String(report.resent).padding(toLength: 8, withPad: " ", startingAt: 0),
        String(report.possibleDuplicates).padding(toLength: 8, withPad: " ", startingAt: 0),
        String(report.connections).padding(toLength: 6, withPad: " ", startingAt: 0),
        String(lost).padding(toLength: 5, withPad: " ", startingAt: 0),
        String(silentDuplicates).padding(toLength: 10, withPad: " ", startingAt: 0),
        String(format: "%.1f", Date().timeIntervalSince(started)),
        ok
            ? ""
            : "FAILED\(report.failure.map { ": \($0.reason)" } ?? "")\(rejectedButDelivered > 0 ? " rejected-but-delivered \(rejectedButDelivered)" : "")"
    )
    totals.sent += report.sent
    totals.accepted += report.accepted
    totals.rejected += report.rejected.count
    totals.unconfirmed += report.unconfirmed.count
    totals.resent += report.resent
    totals.duplicates += report.possibleDuplicates
    totals.lost += lost
    totals.silent += silentDuplicates
}
print(
    "total: \(totals.sent) sent, \(totals.accepted) accepted, \(totals.rejected) rejected, \(totals.unconfirmed) unconfirmed, "
        + "\(totals.resent) resent, \(totals.duplicates) possible duplicates (reported); lost \(totals.lost), silently duplicated \(totals.silent)"
)
print(failed ? "SOAK FAILED" : "soak passed: nothing lost, nothing silently duplicated")
exit(failed ? 1 : 0)
