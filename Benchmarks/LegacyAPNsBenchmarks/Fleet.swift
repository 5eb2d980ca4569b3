import APNsRuntime
import Foundation
import ProcessHarness

/// `fleet`: two `legacy-push bridge` processes on one PostgreSQL database behind HAProxy (`mode
/// tcp`, round robin) against one bridge on SQLite, both in front of `serve --http2`, with the
/// same input sent by our binary `send` (one connection): clean, then 1 % bad tokens (every error
/// response sends the sender's reconnect to the other bridge, which answers the resend from the
/// shared memory). Alternating in each run; every run checked by the bridge suite's ledger.
/// Printed: the rates and the fleet's share of the single bridge's, the bridges' CPU per
/// notification (both bridges together), and the database's transactions per 1,000
/// notifications (`pg_stat_database`: each lookup, commit and heartbeat is one).
///
/// PostgreSQL is a throwaway cluster started for the suite (as the `postgres` user when run as
/// root, fsync on, the default configuration) and removed afterwards; HAProxy is Debian's.
enum FleetBenchmarks {
    static func run(quick: Bool, runs: Int, report: @Sendable (BenchmarkResult) -> Void) {
        let count = quick ? 50_000 : 200_000
        do {
            let scratch = NSTemporaryDirectory() + "/legacy-push-fleetbench-\(getpid())"
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            let input = scratch + "/input.jsonl"
            _ = try BridgeBenchmarks.writeInput(count: count, to: input)
            let bad = Set(stride(from: BridgeBenchmarks.badSpacing / 2, to: count, by: BridgeBenchmarks.badSpacing))
            let cluster = try ThrowawayPostgres(durable: true)
            defer { cluster.stop() }

            var single: [BridgeBenchmarks.Run] = []
            var fleet: [BridgeBenchmarks.Run] = []
            var singleBad: [BridgeBenchmarks.Run] = []
            var fleetBad: [BridgeBenchmarks.Run] = []
            for _ in 0..<runs {
                single.append(try BridgeBenchmarks.throughBridge(input: input, count: count, bad: [], scratch: scratch))
                fleet.append(try throughFleet(input: input, count: count, bad: [], cluster: cluster, scratch: scratch))
                singleBad.append(
                    try BridgeBenchmarks.throughBridge(input: input, count: count, bad: bad, scratch: scratch))
                fleetBad.append(
                    try throughFleet(input: input, count: count, bad: bad, cluster: cluster, scratch: scratch))
            }
            for (name, one, many) in [("clean", single, fleet), ("1 % bad tokens", singleBad, fleetBad)] {
                let alone = BridgeBenchmarks.Run.median(one)
                let together = BridgeBenchmarks.Run.median(many)
                report(
                    BenchmarkResult(
                        name: "fleet: one bridge on SQLite, \(name)", count: count, seconds: alone.seconds,
                        unit: "notifs", cpuSeconds: alone.bridgeCPU,
                        note: "bridge CPU \(String(format: "%.1f", alone.bridgeCPUPerNotification)) µs/notification; "
                            + "runs \(BridgeBenchmarks.Run.rates(one))" + BridgeBenchmarks.Run.failures(one)))
                let transactions = (together.summary["transactions"] as? Int) ?? 0
                report(
                    BenchmarkResult(
                        name: "fleet: two bridges on PostgreSQL behind HAProxy, \(name)", count: count,
                        seconds: together.seconds, unit: "notifs", cpuSeconds: together.bridgeCPU,
                        note: "\(String(format: "%.0f", 100 * together.rate / alone.rate)) % of one bridge; "
                            + "bridges' CPU \(String(format: "%.1f", together.bridgeCPUPerNotification)) "
                            + "µs/notification; \(String(format: "%.1f", Double(transactions) * 1000 / Double(count))) "
                            + "database transactions per 1,000 notifications; runs \(BridgeBenchmarks.Run.rates(many))"
                            + BridgeBenchmarks.Run.failures(many)))
            }
        } catch {
            report(BenchmarkResult(name: "fleet", count: 0, seconds: 1, unit: "notifs", note: "FAILED: \(error)"))
        }
    }

    /// `send` through HAProxy to two fresh bridges on a fresh database of `cluster`, in front of a
    /// fresh simulator refusing the `bad` tokens (and recording what it accepts when there are any).
    static func throughFleet(
        input: String, count: Int, bad: Set<Int>, cluster: ThrowawayPostgres, scratch: String
    ) throws -> BridgeBenchmarks.Run {
        let record = scratch + "/record.jsonl"
        unlink(record)
        var serveFlags = BridgeBenchmarks.authKey
        if !bad.isEmpty {
            serveFlags += ["--record", record]
            for index in bad.sorted() { serveFlags += ["--fail-token", BridgeBenchmarks.tokenHex(index)] }
        }
        let serve = try ServeHTTP2Process(serveFlags)
        defer { serve.stop() }
        let database = try cluster.database(prefix: "fleet")
        let bridges = try (0..<2).map {
            try BridgeProcess(upstreamPort: serve.port, store: database.uri, log: scratch + "/fleet-bridge-\($0).log")
        }
        defer { for bridge in bridges { bridge.stop() } }
        // The benchmark reads no feedback: the feedback backends are the gateway ports.
        let balancer = try HAProxyFleet(
            template: Package.root + "/Fixtures/haproxy/fleet.cfg.in", bridges: bridges.map { ($0.port, $0.port) },
            folder: scratch)
        defer { balancer.stop() }
        let transactionsBefore = try cluster.transactions(database.name)
        let cpuBefore = bridges.map { $0.cpuSeconds ?? 0 }
        var run = try BridgeBenchmarks.measure(
            Package.cli,
            [
                "send", "--input", input, "--gateway", "127.0.0.1:\(balancer.gateway)", "--ca-file",
                Package.certs("ca.pem"), "--cert", Package.certs("universal-modern.p12"), "--passphrase-file",
                Package.certs("passphrase.txt"), "--json", "--quiet",
            ], count: count, scratch: scratch, serve: serve, bridge: nil)
        run.bridgeCPU = zip(bridges, cpuBefore).map { ($0.cpuSeconds ?? 0) - $1 }.reduce(0, +)
        // Counted once the bridges have closed their connections: a backend publishes its
        // statistics at most once a second, and at its end.
        for bridge in bridges { bridge.stop() }
        usleep(200_000)
        run.summary["transactions"] = try cluster.transactions(database.name) - transactionsBefore
        run.bridgeStatistics = bridges.compactMap(\.statistics).joined(separator: " | ")
        serve.stop()
        run.failure = BridgeBenchmarks.ledger(run, count: count, bad: bad, record: bad.isEmpty ? nil : record)
        return run
    }
}
