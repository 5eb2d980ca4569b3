import APNsRuntime
import Foundation
import GatewaySimulator

/// `http2-client`: our HTTP/2 client, `legacy-push send --http2 --input FILE` (token auth, one
/// connection), sending 200,000 notifications (~100-byte payloads, distinct tokens) into a fresh
/// `legacy-push serve --http2 --quiet` each run; in the same invocation, alternating, the C
/// reference pair (h2load, one connection, `-m 1000`, the same body, against nghttpd) and aioapns
/// (a Python APNs client, from the test venv that Scripts/test-tools.sh installs) sending a smaller
/// count with token auth into a fresh `serve --http2`. Then the sender's peak memory for 200,000
/// against 1,000,000 lines.
///
/// Our rate is `send`'s own `seconds` (first connection to last confirmation; the file is parsed
/// before), the wall time from spawn to exit is in the note. Our CPU is the whole `send` process
/// from wait4 (start-up, key loading and parsing the file included). h2load's CPU is the
/// RUSAGE_CHILDREN delta around it. aioapns's CPU is measured inside the Python process around
/// the sends only (after the imports and the first notification, which opens the connection), so
/// the CPU ratio is conservative. Peak memory is wait4's `ru_maxrss` (which Linux raises to this
/// process's own peak at the spawn, printed alongside) and the polled `VmHWM` of the child.
enum HTTP2ClientBenchmarks {
    static func run(quick: Bool, runs: Int, report: @Sendable (BenchmarkResult) -> Void) async {
        let count = quick ? 50_000 : 200_000
        let pythonCount = quick ? 1_000 : 5_000
        let longCount = quick ? 200_000 : 1_000_000
        do {
            let tools = try HTTP2ServeBenchmarks.Tools()
            let python = Package.root + "/.build/test-tools/venv/bin/python"
            let scratch = NSTemporaryDirectory() + "/legacy-push-h2clientbench-\(getpid())"
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            let input = scratch + "/input.jsonl"
            let payloadBytes = try BridgeBenchmarks.writeInput(count: count, to: input)
            let body = scratch + "/body.json"
            let payload =
                #"{"aps":{"alert":{"title":"Benchmark","body":"A notification of about 100 bytes"}},"n":"0000000"}"#
            try Data(payload.utf8).write(to: URL(fileURLWithPath: body))
            let program = scratch + "/aioapns-bench.py"
            try Data(aioapnsProgram.utf8).write(to: URL(fileURLWithPath: program))
            let headers = try h2loadHeaders()
            let reference = try NghttpdProcess(tools.nghttpd, root: scratch)
            defer { reference.stop() }

            var ours: [Send] = []
            var h2loads: [HTTP2ServeBenchmarks.H2Load] = []
            var h2loadCPU: [Double] = []
            var pythons: [PythonRun] = []
            for _ in 0..<runs {
                ours.append(try send(input: input, count: count, scratch: scratch))
                let before = childrenCPU()
                h2loads.append(
                    try HTTP2ServeBenchmarks.H2Load.run(
                        tools.h2load, count: count, body: body, headers: headers, port: reference.port))
                h2loadCPU.append(childrenCPU() - before)
                if FileManager.default.isExecutableFile(atPath: python) {
                    pythons.append(try aioapns(python: python, program: program, count: pythonCount, scratch: scratch))
                }
            }
            let load = uptime()
            let mine = ours.sorted { $0.rate < $1.rate }[ours.count / 2]
            let theirs = HTTP2ServeBenchmarks.H2Load.median(h2loads)
            let referenceCPU = h2loadCPU.sorted()[h2loadCPU.count / 2]
            report(
                BenchmarkResult(
                    name: "http2-client: send --http2, 1 connection", count: count, seconds: mine.seconds,
                    unit: "notifs", cpuSeconds: mine.cpuSeconds, bytes: count * payloadBytes,
                    peakMemoryMB: mine.peakMB,
                    note: "client CPU \(micro(mine.cpuPerNotification)) µs/notification; "
                        + "\(String(format: "%.0f", 100 * mine.rate / theirs.rate)) % of h2load -> nghttpd; "
                        + "wall \(String(format: "%.2f", mine.wall)) s; serve CPU \(String(format: "%.2f", mine.serveCPU)) s; "
                        + "\(mine.accounting); runs \(ours.map { BenchmarkResult.human($0.rate) }.joined(separator: ", "))/s; "
                        + "load \(load)"))
            report(
                BenchmarkResult(
                    name: "http2-client: h2load -> nghttpd (C reference)", count: count, seconds: theirs.seconds,
                    unit: "req", cpuSeconds: referenceCPU,
                    note: "h2load -c 1 -m 1000, same body; client CPU "
                        + "\(micro(referenceCPU / Double(count))) µs/request (median of the runs' CPU); "
                        + "runs \(h2loads.map { BenchmarkResult.human($0.rate) }.joined(separator: ", "))/s"))
            if pythons.isEmpty {
                report(
                    BenchmarkResult(
                        name: "http2-client: aioapns", count: 0, seconds: 1, unit: "notifs",
                        note: "SKIPPED: no \(python) (run Scripts/test-tools.sh)"))
            } else {
                let python = pythons.sorted { $0.cpuPerNotification < $1.cpuPerNotification }[pythons.count / 2]
                let ratio = python.cpuPerNotification / mine.cpuPerNotification
                report(
                    BenchmarkResult(
                        name: "http2-client: aioapns, 1 connection", count: python.count, seconds: python.seconds,
                        unit: "notifs", cpuSeconds: python.cpuSeconds,
                        note: "client CPU \(micro(python.cpuPerNotification)) µs/notification (sends only; "
                            + "\(String(format: "%.2f", python.processCPU)) s for the whole process); "
                            + "ours uses \(String(format: "%.1f", ratio))x less CPU per notification; "
                            + "\(python.accepted) accepted; runs "
                            + "\(pythons.map { micro($0.cpuPerNotification) }.joined(separator: ", ")) µs"))
            }

            // Memory: the sender's peak for 200,000 lines (the median run above) and 1,000,000.
            let long = scratch + "/long.jsonl"
            _ = try BridgeBenchmarks.writeInput(count: longCount, to: long)
            let big = try send(input: long, count: longCount, scratch: scratch)
            report(
                BenchmarkResult(
                    name: "http2-client: send --http2 memory, \(longCount / 1000)k lines", count: longCount,
                    seconds: big.seconds, unit: "notifs", cpuSeconds: big.cpuSeconds, peakMemoryMB: big.peakMB,
                    note:
                        "ru_maxrss \(String(format: "%.1f", big.maxRSSMB)) MB, VmHWM \(String(format: "%.1f", big.peakMB)) MB "
                        + "(\(count / 1000)k: \(String(format: "%.1f", mine.maxRSSMB)) / \(String(format: "%.1f", mine.peakMB)) MB; "
                        + "this process \(String(format: "%.1f", big.parentMB)) MB at the spawn); "
                        + "client CPU \(micro(big.cpuPerNotification)) µs/notification; \(big.accounting)"))
        } catch {
            report(
                BenchmarkResult(name: "http2-client", count: 0, seconds: 1, unit: "notifs", note: "FAILED: \(error)"))
        }
    }

    static func micro(_ seconds: Double) -> String { String(format: "%.2f", seconds * 1e6) }

    /// The load averages, from /proc/loadavg ("0.90 1.05 1.57").
    static func uptime() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// CPU seconds of this process's children that have been waited for.
    static func childrenCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return Clock.seconds(usage.ru_utime) + Clock.seconds(usage.ru_stime)
    }

    /// The request headers h2load sends: a bearer token from our signer, as `send` does.
    static func h2loadHeaders() throws -> [String] {
        let key = try SigningKey(
            pemRepresentation: Array(
                try Data(contentsOf: URL(fileURLWithPath: Package.certs("AuthKey_ABC123DEFG.p8")))))
        let token = try key.signProviderToken(
            keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: Int64(Date().timeIntervalSince1970))
        return [
            "-H", "authorization: \(token.authorizationHeaderValue)", "-H", "apns-topic: com.example.legacy", "-H",
            "apns-push-type: alert",
        ]
    }

    /// One `send --http2` run.
    struct Send {
        var seconds: Double
        var wall: Double
        var cpuSeconds: Double
        var maxRSSMB: Double
        var peakMB: Double
        var parentMB: Double
        var serveCPU: Double
        var count: Int
        var accounting: String

        var rate: Double { Double(count) / seconds }
        var cpuPerNotification: Double { cpuSeconds / Double(count) }
    }

    /// `send --http2` (token auth, one connection) into a fresh `serve --http2`.
    static func send(input: String, count: Int, scratch: String) throws -> Send {
        let serve = try ServeHTTP2Process(BridgeBenchmarks.authKey)
        defer { serve.stop() }
        let output = scratch + "/send.jsonl"
        let serveBefore = serve.cpuSeconds ?? 0
        let parentMB = Double(highWaterMark(of: getpid()) ?? 0) / 1024
        let outcome = spawn(
            Package.cli,
            [
                "send", "--http2", "--input", input, "--gateway", "127.0.0.1:\(serve.port)", "--ca-file",
                Package.certs("ca.pem"), "--auth-key", Package.certs("AuthKey_ABC123DEFG.p8"), "--team-id",
                "DEF123GHIJ", "--topic", "com.example.legacy", "--json", "--quiet",
            ], stdout: output, stderr: scratch + "/send.err")
        let serveCPU = (serve.cpuSeconds ?? 0) - serveBefore
        let lines = (try? String(contentsOfFile: output, encoding: .utf8))?.split(separator: "\n") ?? []
        let summary = lines.reversed().lazy.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        .first { $0["event"] as? String == "summary" }
        guard let summary, let seconds = summary["seconds"] as? Double, seconds > 0 else {
            let stderr = (try? String(contentsOfFile: scratch + "/send.err", encoding: .utf8)) ?? ""
            throw HTTP2ServeBenchmarks.BenchmarkError(
                "send --http2 exited \(outcome.status) without a summary: \(stderr.suffix(300))")
        }
        let accepted = summary["accepted"] as? Int ?? 0
        let connections = summary["connections"] as? Int ?? 0
        var accounting = "\(accepted) accepted, \(connections) connection\(connections == 1 ? "" : "s")"
        if accepted != count { accounting += " (FAILED: expected \(count) accepted)" }
        return Send(
            seconds: seconds, wall: outcome.seconds, cpuSeconds: outcome.cpuSeconds, maxRSSMB: outcome.maxRSSMB,
            peakMB: outcome.peakMB, parentMB: parentMB, serveCPU: serveCPU, count: count, accounting: accounting)
    }

    /// What a spawned process cost: wall time, CPU and `ru_maxrss` from wait4, polled VmHWM.
    struct Outcome {
        var status: Int32
        var seconds: Double
        var cpuSeconds: Double
        var maxRSSMB: Double
        var peakMB: Double
    }

    static func spawn(_ path: String, _ arguments: [String], stdout: String, stderr: String) -> Outcome {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let start = Clock.now()
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        posix_spawn_file_actions_destroy(&actions)
        guard spawned == 0 else { return Outcome(status: -1, seconds: 0, cpuSeconds: 0, maxRSSMB: 0, peakMB: 0) }
        var status: Int32 = 0
        var usage = rusage()
        var peakKB = 0
        while wait4(pid, &status, WNOHANG, &usage) == 0 {
            peakKB = max(peakKB, highWaterMark(of: pid) ?? 0)
            usleep(5_000)
        }
        return Outcome(
            status: (status >> 8) & 0xFF, seconds: Clock.now() - start,
            cpuSeconds: Clock.seconds(usage.ru_utime) + Clock.seconds(usage.ru_stime),
            maxRSSMB: Double(usage.ru_maxrss) / 1024, peakMB: Double(peakKB) / 1024)
    }

    /// One aioapns run, as its program reports it.
    struct PythonRun {
        var count: Int
        var accepted: Int
        var seconds: Double
        var cpuSeconds: Double
        var processCPU: Double

        var cpuPerNotification: Double { cpuSeconds / Double(count) }
    }

    /// aioapns sending `count` notifications (token auth, one connection, up to 1,000 at once)
    /// into a fresh `serve --http2`.
    static func aioapns(python: String, program: String, count: Int, scratch: String) throws -> PythonRun {
        let serve = try ServeHTTP2Process(BridgeBenchmarks.authKey)
        defer { serve.stop() }
        let output = scratch + "/aioapns.json"
        let outcome = spawn(
            python,
            [
                program, String(serve.port), Package.certs("ca.pem"), Package.certs("AuthKey_ABC123DEFG.p8"),
                String(count),
            ], stdout: output, stderr: scratch + "/aioapns.err")
        guard let data = FileManager.default.contents(atPath: output),
            let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
            let seconds = object["seconds"] as? Double, let cpu = object["cpuSeconds"] as? Double
        else {
            let stderr = (try? String(contentsOfFile: scratch + "/aioapns.err", encoding: .utf8)) ?? ""
            throw HTTP2ServeBenchmarks.BenchmarkError("aioapns exited \(outcome.status): \(stderr.suffix(400))")
        }
        return PythonRun(
            count: count, accepted: object["accepted"] as? Int ?? 0, seconds: seconds, cpuSeconds: cpu,
            processCPU: outcome.cpuSeconds)
    }

    /// Sends N notifications with aioapns (token auth, one connection, at most 1,000 outstanding)
    /// after one that opens the connection (and a work-around for aioapns's stream limit, below); prints the sends' wall time and this process's CPU
    /// over them (user + system) as JSON.
    static let aioapnsProgram = #"""
        import asyncio, json, resource, ssl, sys, time
        from aioapns import APNs, NotificationRequest
        from aioapns.connection import APNsDevelopmentClientProtocol, APNsProductionClientProtocol

        port, ca, key, count = sys.argv[1:5]
        count = int(count)
        for protocol in (APNsDevelopmentClientProtocol, APNsProductionClientProtocol):
            protocol.APNS_SERVER = "localhost"
            protocol.APNS_PORT = int(port)

        def cpu():
            usage = resource.getrusage(resource.RUSAGE_SELF)
            return usage.ru_utime + usage.ru_stime

        def request(index):
            return NotificationRequest(
                device_token="74" * 28 + "%08x" % index,
                message={"aps": {"alert": {"title": "Benchmark", "body": "A notification of about 100 bytes"}},
                         "n": "%07d" % index})

        async def main():
            client = APNs(key=open(key).read(), key_id="ABC123DEFG", team_id="DEF123GHIJ", topic="com.example.legacy",
                          use_sandbox=True, ssl_context=ssl.create_default_context(cafile=ca), max_connections=1,
                          max_connection_attempts=1)
            first = await client.send_notification(request(count))
            assert first.is_successful, first.description
            # aioapns 4.0 stays at 1-2 streams when the limit rises from 1 while a stream is open
            # (DynamicBoundedSemaphore.bound's setter releases against the old bound), and its
            # pool then polls every 10 ms per waiting send. Nothing is in flight here: open the
            # semaphore to the bound the server set, so aioapns runs at its best.
            for connection in client.pool.connections:
                connection.free_channels._value = connection.free_channels.bound
            gate = asyncio.Semaphore(1000)
            async def one(index):
                async with gate:
                    return (await client.send_notification(request(index))).is_successful
            start, before = time.monotonic(), cpu()
            results = await asyncio.gather(*(one(index) for index in range(count)))
            seconds, spent = time.monotonic() - start, cpu() - before
            print(json.dumps({"count": count, "accepted": sum(results), "seconds": seconds, "cpuSeconds": spent}))

        asyncio.run(main())
        """#
}
