import APNsRuntime
import Foundation

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
            let cluster = try BenchmarkPostgres(folder: scratch)
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
        input: String, count: Int, bad: Set<Int>, cluster: BenchmarkPostgres, scratch: String
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
        let database = try cluster.database()
        let bridges = try (0..<2).map {
            try BridgeProcess(upstreamPort: serve.port, store: database.uri, log: scratch + "/fleet-bridge-\($0).log")
        }
        defer { for bridge in bridges { bridge.stop() } }
        let balancer = try HAProxyProcess(backends: bridges.map(\.port), folder: scratch)
        defer { balancer.stop() }
        let transactionsBefore = try cluster.transactions(database.name)
        let cpuBefore = bridges.map { $0.cpuSeconds ?? 0 }
        var run = try BridgeBenchmarks.measure(
            Package.cli,
            [
                "send", "--input", input, "--gateway", "127.0.0.1:\(balancer.port)", "--ca-file",
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

/// A throwaway PostgreSQL 15 cluster for the suite (Debian's `postgresql`).
final class BenchmarkPostgres {
    let directory: String
    let port: UInt16
    private var databases = 0
    static let programs = "/usr/lib/postgresql/15/bin"

    init(folder: String) throws {
        directory = folder + "/pg"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0, let user = getpwnam("postgres") {
            chmod(folder, 0o755)
            chown(directory, user.pointee.pw_uid, user.pointee.pw_gid)
        }
        guard Self.run(Self.programs + "/initdb", ["-D", directory + "/data", "-A", "trust", "-U", "postgres"]) == 0
        else { throw HTTP2ServeBenchmarks.BenchmarkError("initdb failed (is postgresql installed?)") }
        port = try Self.freePort()
        let started = Self.run(
            Self.programs + "/pg_ctl",
            [
                "-D", directory + "/data", "-l", directory + "/server.log", "-w", "-o",
                "-k \(directory) -p \(port) -c listen_addresses=127.0.0.1", "start",
            ])
        guard started == 0 else { throw HTTP2ServeBenchmarks.BenchmarkError("pg_ctl start failed") }
    }

    /// A fresh database: its name and connection URI.
    func database() throws -> (name: String, uri: String) {
        databases += 1
        let name = "fleet\(databases)"
        _ = try psql("postgres", "CREATE DATABASE \(name)")
        return (name, "postgresql://postgres@127.0.0.1:\(port)/\(name)")
    }

    /// Transactions committed and rolled back in `database` so far.
    func transactions(_ database: String) throws -> Int {
        // The statistics collector publishes at most every 500 ms; this reads them fresh.
        let text = try psql(
            database,
            "SELECT pg_stat_clear_snapshot(); SELECT xact_commit + xact_rollback FROM pg_stat_database "
                + "WHERE datname = current_database()")
        return Int(text.split(separator: "\n").last ?? "") ?? 0
    }

    func psql(_ database: String, _ sql: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
        process.arguments = ["-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", database, "-At", "-c", sql]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw HTTP2ServeBenchmarks.BenchmarkError("psql \(sql) failed") }
        return String(decoding: data, as: UTF8.self)
    }

    func stop() {
        _ = Self.run(Self.programs + "/pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"])
    }

    /// Runs a server program (as the `postgres` user when run as root) and waits for it with
    /// waitpid: `pg_ctl start` leaves the server running, which Foundation's `Process` does not
    /// always notice the end of.
    private static func run(_ program: String, _ arguments: [String]) -> Int32 {
        let argv =
            getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", program] + arguments : [program] + arguments
        var pointers = argv.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        guard posix_spawn(&pid, argv[0], &actions, nil, &pointers, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : -1
    }

    /// A free loopback port (bound by the runtime's listener and released).
    static func freePort() throws -> UInt16 {
        try Listener(host: "127.0.0.1", port: 0).endpoint.port
    }
}

/// HAProxy (`mode tcp`, round robin, health checks) in front of `backends`.
final class HAProxyProcess {
    let process = Process()
    let port: UInt16

    init(backends: [UInt16], folder: String) throws {
        port = try BenchmarkPostgres.freePort()
        // The fleet's configuration (Fixtures/haproxy/fleet.cfg.in), without a feedback port.
        let template = try String(contentsOfFile: Package.root + "/Fixtures/haproxy/fleet.cfg.in", encoding: .utf8)
        let servers = backends.enumerated().map {
            "    server b\($0.offset) 127.0.0.1:\($0.element) check inter 200ms fall 2 rise 1"
        }
        let configuration = template.replacingOccurrences(of: "@GATEWAY_PORT@", with: "\(port)")
            .replacingOccurrences(of: "@FEEDBACK_PORT@", with: "\(try BenchmarkPostgres.freePort())")
            .replacingOccurrences(of: "@BRIDGES@", with: servers.joined(separator: "\n"))
            .replacingOccurrences(of: "@FEEDBACKS@", with: servers.joined(separator: "\n"))
        let path = folder + "/haproxy.cfg"
        try configuration.write(toFile: path, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/haproxy")
        process.arguments = ["-db", "-f", path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Listening once a TCP connection is taken.
        for _ in 0..<100 {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = port.bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(descriptor)
            if connected { return }
            usleep(20_000)
        }
        throw HTTP2ServeBenchmarks.BenchmarkError("haproxy did not start")
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}
