import Foundation

/// `bridge`: our binary `legacy-push send --input FILE` through `legacy-push bridge` to
/// `legacy-push serve --http2` (three processes), against the same notifications sent directly
/// with `legacy-push send --http2 --input FILE` to a `serve --http2` of its own, alternating in
/// one invocation; then the same through the bridge with 1 % bad tokens (`serve --http2
/// --fail-token` for every 100th token), checked for lossless accounting: the sender's `--json`
/// summary adds up to the input, its rejections are exactly the bad tokens, and the simulator's
/// `--record` holds every good token exactly once and no bad one.
///
/// The bridge case runs twice in each round, with `--metrics` and without, so the cost of metrics is
/// measured in the same invocation (the metrics run scrapes `/metrics` once after its send, and
/// checks that the bridge's count of forwarded notifications is the input's).
///
/// Every case starts fresh processes (nothing warm carries over from the previous case), all on
/// free ports. The rate is the sender's own `seconds` (first connection to last confirmation;
/// the file is parsed before); wall time from spawn to exit is in the note. CPU: the bridge's and
/// the simulator's from /proc/<pid>/stat (from just before the send to just after), the sender's
/// from wait4.
enum BridgeBenchmarks {
    /// Every `badSpacing`-th notification goes to a token the simulator refuses (1 %).
    static let badSpacing = 100

    static func run(quick: Bool, runs: Int, report: @Sendable (BenchmarkResult) -> Void) {
        let count = quick ? 50_000 : 200_000
        do {
            let scratch = NSTemporaryDirectory() + "/legacy-push-bridgebench-\(getpid())"
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            let input = scratch + "/input.jsonl"
            let payloadBytes = try writeInput(count: count, to: input)
            let bad = Set(stride(from: badSpacing / 2, to: count, by: badSpacing))

            // An input the sender's cache holds whole: it writes everything, then waits, so each
            // error response is due while the sender is quiet (the bridge must wake for it, not
            // wait for its socket poll to time out).
            let quietCount = quick ? 5_000 : 20_000
            let quietInput = scratch + "/quiet.jsonl"
            _ = try writeInput(count: quietCount, to: quietInput)
            let quietBad = Set(stride(from: badSpacing / 2, to: quietCount, by: badSpacing))

            var bridged: [Run] = []
            var metered: [Run] = []
            var direct: [Run] = []
            var rejecting: [Run] = []
            var quiet: [Run] = []
            var rawQuiet: [Run] = []
            for _ in 0..<runs {
                bridged.append(try throughBridge(input: input, count: count, bad: [], scratch: scratch))
                metered.append(try throughBridge(input: input, count: count, bad: [], scratch: scratch, metrics: true))
                direct.append(try directly(input: input, count: count, scratch: scratch))
                rejecting.append(try throughBridge(input: input, count: count, bad: bad, scratch: scratch))
                quiet.append(try throughBridge(input: quietInput, count: quietCount, bad: quietBad, scratch: scratch))
                rawQuiet.append(try quietSenderThroughBridge(count: quietCount, bad: quietBad, scratch: scratch))
            }
            let bridge = Run.median(bridged)
            let straight = Run.median(direct)
            let ratio = bridge.rate / straight.rate
            report(
                BenchmarkResult(
                    name: "bridge: send -> bridge -> serve --http2", count: count, seconds: bridge.seconds,
                    unit: "notifs", cpuSeconds: bridge.bridgeCPU, bytes: count * payloadBytes,
                    note: "\(String(format: "%.0f", 100 * ratio)) % of direct; "
                        + "bridge CPU \(String(format: "%.1f", bridge.bridgeCPUPerNotification)) µs/notification; "
                        + bridge.note + "; runs \(Run.rates(bridged))" + Run.failures(bridged)))
            let withMetrics = Run.median(metered)
            report(
                BenchmarkResult(
                    name: "bridge: send -> bridge --metrics -> serve --http2", count: count,
                    seconds: withMetrics.seconds, unit: "notifs", cpuSeconds: withMetrics.bridgeCPU,
                    bytes: count * payloadBytes,
                    note: "\(String(format: "%.1f", 100 * withMetrics.rate / bridge.rate)) % of metrics off (same "
                        + "invocation); bridge CPU \(String(format: "%.1f", withMetrics.bridgeCPUPerNotification)) "
                        + "µs/notification (off: \(String(format: "%.1f", bridge.bridgeCPUPerNotification))); "
                        + withMetrics.note + "; runs \(Run.rates(metered))" + Run.failures(metered)))
            let listenerCount = quick ? 500_000 : 2_000_000
            let listener = (0..<3).map { _ in MetricsCost.perNotification(count: listenerCount) }.sorted()[1]
            report(
                BenchmarkResult(
                    name: "bridge: --metrics' own work per notification (in process)", count: listenerCount,
                    seconds: listener * Double(listenerCount), unit: "notifs",
                    cpuSeconds: listener * Double(listenerCount),
                    note: "\(String(format: "%.0f", listener * 1e9)) ns of thread CPU per notification (its .sent and "
                        + ".accepted recorded, median of 3): \(String(format: "%.1f", 100 * listener * 1e6 / bridge.bridgeCPUPerNotification)) % "
                        + "of the bridge's CPU per notification with metrics off "
                        + "(\(String(format: "%.1f", bridge.bridgeCPUPerNotification)) µs)"))
            report(
                BenchmarkResult(
                    name: "bridge: send --http2 -> serve --http2 (direct)", count: count, seconds: straight.seconds,
                    unit: "notifs", cpuSeconds: straight.senderCPU, bytes: count * payloadBytes,
                    note: straight.note + "; runs \(Run.rates(direct))" + Run.failures(direct)))
            let bad1 = Run.median(rejecting)
            report(
                BenchmarkResult(
                    name: "bridge: 1 % bad tokens through the bridge", count: count, seconds: bad1.seconds,
                    unit: "notifs", cpuSeconds: bad1.bridgeCPU, bytes: count * payloadBytes,
                    note: "bridge CPU \(String(format: "%.1f", bad1.bridgeCPUPerNotification)) µs/notification; "
                        + bad1.note + "; runs \(Run.rates(rejecting))" + Run.failures(rejecting)))
            let quiet1 = Run.median(quiet)
            report(
                BenchmarkResult(
                    name: "bridge: 1 % bad tokens, the input within the sender's cache", count: quietCount,
                    seconds: quiet1.seconds, unit: "notifs", cpuSeconds: quiet1.bridgeCPU,
                    bytes: quietCount * payloadBytes,
                    note: "every error response due while the sender waits; "
                        + "bridge CPU \(String(format: "%.1f", quiet1.bridgeCPUPerNotification)) µs/notification; "
                        + quiet1.note + "; runs \(Run.rates(quiet))" + Run.failures(quiet)))
            let raw = Run.median(rawQuiet)
            report(
                BenchmarkResult(
                    name: "bridge: 1 % bad tokens, a quiet sender (writes a burst, then waits)", count: quietCount,
                    seconds: raw.seconds, unit: "notifs", cpuSeconds: raw.bridgeCPU,
                    note: "each error response due while the sender writes nothing; "
                        + "bridge CPU \(String(format: "%.1f", raw.bridgeCPUPerNotification)) µs/notification; "
                        + raw.note + "; runs \(Run.rates(rawQuiet))" + Run.failures(rawQuiet)))
        } catch {
            report(BenchmarkResult(name: "bridge", count: 0, seconds: 1, unit: "notifs", note: "FAILED: \(error)"))
        }
    }

    /// One measured send.
    struct Run {
        var seconds: Double
        var wall: Double
        var senderCPU: Double
        var bridgeCPU: Double?
        var serveCPU: Double
        var count: Int
        var summary: [String: Any]
        var bridgeStatistics: String?
        var failure: String?

        var rate: Double { Double(count) / seconds }
        var bridgeCPUPerNotification: Double { (bridgeCPU ?? 0) / Double(count) * 1e6 }

        var note: String {
            var parts = [
                "wall \(String(format: "%.2f", wall)) s",
                "sender CPU \(String(format: "%.2f", senderCPU)) s",
                "serve CPU \(String(format: "%.2f", serveCPU)) s",
            ]
            if let bridgeCPU { parts.append("bridge CPU \(String(format: "%.2f", bridgeCPU)) s") }
            let fields = ["accepted", "rejected", "unconfirmed", "notSent", "resent", "connections"]
            parts.append(
                fields.compactMap { key in (summary[key] as? Int).map { "\(key) \($0)" } }.joined(separator: " "))
            if let bridgeStatistics { parts.append("bridge: \(bridgeStatistics)") }
            if let failure { parts.append("FAILED: \(failure)") }
            return parts.joined(separator: "; ")
        }

        static func median(_ runs: [Run]) -> Run { runs.sorted { $0.rate < $1.rate }[runs.count / 2] }
        /// "; run 2 FAILED: ..." for each run whose ledger did not hold (the median may be another).
        static func failures(_ runs: [Run]) -> String {
            runs.enumerated().compactMap { offset, run in run.failure.map { "; run \(offset + 1) FAILED: \($0)" } }
                .joined()
        }

        static func rates(_ runs: [Run]) -> String {
            runs.map { BenchmarkResult.human($0.rate) }.joined(separator: ", ") + "/s"
        }
    }

    /// The token of notification `index`: 28 bytes of 0x74, then the index (big-endian).
    static func tokenHex(_ index: Int) -> String {
        String(repeating: "74", count: 28) + String(format: "%08x", index)
    }

    /// Writes `count` JSON lines with ~100-byte payloads; returns the payload size.
    static func writeInput(count: Int, to path: String) throws -> Int {
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let handle = FileHandle(forWritingAtPath: path)
        else { throw HTTP2ServeBenchmarks.BenchmarkError("cannot write \(path)") }
        defer { try? handle.close() }
        var chunk = ""
        var payloadBytes = 0
        for index in 0..<count {
            let payload =
                #"{"aps":{"alert":{"title":"Benchmark","body":"A notification of about 100 bytes"}},"n":""#
                + String(format: "%07d", index) + #""}"#
            payloadBytes = payload.utf8.count
            chunk += #"{"token":""# + tokenHex(index) + #"","payload":"# + payload + "}\n"
            if index % 10_000 == 9_999 {
                handle.write(Data(chunk.utf8))
                chunk = ""
            }
        }
        handle.write(Data(chunk.utf8))
        return payloadBytes
    }

    static var authKey: [String] { ["--auth-key", "ABC123DEFG:DEF123GHIJ:" + Package.certs("AuthKey_ABC123DEFG.p8")] }

    /// `send` through a fresh bridge in front of a fresh simulator (refusing the `bad` tokens,
    /// recording what it accepts when there are any).
    static func throughBridge(
        input: String, count: Int, bad: Set<Int>, scratch: String, metrics: Bool = false
    ) throws -> Run {
        let record = scratch + "/record.jsonl"
        unlink(record)
        var serveFlags = authKey
        if !bad.isEmpty {
            serveFlags += ["--record", record]
            for index in bad.sorted() { serveFlags += ["--fail-token", tokenHex(index)] }
        }
        let serve = try ServeHTTP2Process(serveFlags)
        defer { serve.stop() }
        let store = scratch + "/bridge-\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm", "-journal"] { unlink(store + suffix) } }
        let bridge = try BridgeProcess(
            upstreamPort: serve.port, store: store, log: scratch + "/bridge.log", metrics: metrics)
        defer { bridge.stop() }  // also when the send fails (stop is idempotent)
        var run = try measure(
            Package.cli,
            [
                "send", "--input", input, "--gateway", "127.0.0.1:\(bridge.port)", "--ca-file", Package.certs("ca.pem"),
                "--cert", Package.certs("universal-modern.p12"), "--passphrase-file",
                Package.certs("passphrase.txt"), "--json", "--quiet",
            ], count: count, scratch: scratch, serve: serve, bridge: bridge)
        let forwarded = bridge.metricsURL.map { scrape($0, "legacy_push_notifications_forwarded_total") }
        bridge.stop()
        run.bridgeStatistics = bridge.statistics
        if let forwarded, forwarded != count {
            run.failure = "/metrics said \(forwarded.map(String.init) ?? "nothing") forwarded, the input is \(count)"
        }
        serve.stop()
        run.failure = run.failure ?? ledger(run, count: count, bad: bad, record: bad.isEmpty ? nil : record)
        return run
    }

    /// The value of an unlabelled family on a `/metrics` page, fetched with curl.
    static func scrape(_ url: String, _ family: String) -> Int? {
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        curl.arguments = ["curl", "-s", "--max-time", "10", url]
        let out = Pipe()
        curl.standardOutput = out
        guard (try? curl.run()) != nil else { return nil }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        curl.waitUntilExit()
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(family + " ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") }
    }

    /// ``QuietSender`` through a fresh bridge in front of a fresh simulator refusing the `bad`
    /// tokens (in this process: the sender's CPU is not measured apart).
    static func quietSenderThroughBridge(count: Int, bad: Set<Int>, scratch: String) throws -> Run {
        var serveFlags = authKey
        for index in bad.sorted() { serveFlags += ["--fail-token", tokenHex(index)] }
        let serve = try ServeHTTP2Process(serveFlags)
        defer { serve.stop() }
        let store = scratch + "/bridge-\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm", "-journal"] { unlink(store + suffix) } }
        let bridge = try BridgeProcess(upstreamPort: serve.port, store: store, log: scratch + "/bridge.log")
        defer { bridge.stop() }
        let serveBefore = serve.cpuSeconds ?? 0
        let bridgeBefore = bridge.cpuSeconds ?? 0
        let wallStart = Date()
        let outcome = try QuietSender.run(port: bridge.port, count: count, bad: bad)
        var run = Run(
            seconds: outcome.seconds, wall: Date().timeIntervalSince(wallStart), senderCPU: 0,
            bridgeCPU: (bridge.cpuSeconds ?? 0) - bridgeBefore, serveCPU: (serve.cpuSeconds ?? 0) - serveBefore,
            count: count, summary: ["connections": outcome.connections, "rejected": outcome.errorResponses])
        bridge.stop()
        run.bridgeStatistics = bridge.statistics
        if let failure = outcome.failure {
            run.failure = failure
        } else if outcome.errorResponses != bad.count {
            run.failure = "\(outcome.errorResponses) error responses for \(bad.count) bad tokens"
        }
        return run
    }

    /// `send --http2` straight to a fresh simulator (token auth, as the bridge uses).
    static func directly(input: String, count: Int, scratch: String) throws -> Run {
        let serve = try ServeHTTP2Process(authKey)
        defer { serve.stop() }
        var run = try measure(
            Package.cli,
            [
                "send", "--http2", "--input", input, "--gateway", "127.0.0.1:\(serve.port)", "--ca-file",
                Package.certs("ca.pem"), "--auth-key", Package.certs("AuthKey_ABC123DEFG.p8"), "--team-id",
                "DEF123GHIJ", "--topic", "com.example.legacy", "--json", "--quiet",
            ], count: count, scratch: scratch, serve: serve, bridge: nil)
        run.failure = ledger(run, count: count, bad: [], record: nil)
        return run
    }

    static func measure(
        _ path: String, _ arguments: [String], count: Int, scratch: String, serve: ServeHTTP2Process,
        bridge: BridgeProcess?
    ) throws -> Run {
        let output = scratch + "/send.jsonl"
        let serveBefore = serve.cpuSeconds ?? 0
        let bridgeBefore = bridge?.cpuSeconds ?? 0
        let outcome = Measured.run(path, arguments, stdout: output, stderr: scratch + "/send.err")
        let serveCPU = (serve.cpuSeconds ?? 0) - serveBefore
        let bridgeCPU = bridge.map { ($0.cpuSeconds ?? 0) - bridgeBefore }
        let lines = (try? String(contentsOfFile: output, encoding: .utf8))?.split(separator: "\n") ?? []
        let objects = lines.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        guard let summary = objects.last(where: { $0["event"] as? String == "summary" }),
            let seconds = summary["seconds"] as? Double, seconds > 0
        else {
            let stderr = (try? String(contentsOfFile: scratch + "/send.err", encoding: .utf8)) ?? ""
            throw HTTP2ServeBenchmarks.BenchmarkError(
                "send exited \(outcome.status) without a summary: \(stderr.suffix(300))")
        }
        var run = Run(
            seconds: seconds, wall: outcome.seconds, senderCPU: outcome.cpuSeconds, bridgeCPU: bridgeCPU,
            serveCPU: serveCPU, count: count, summary: summary)
        let rejected = objects.filter { $0["event"] as? String == "rejected" }.compactMap { $0["token"] as? String }
        run.summary["rejectedTokens"] = rejected
        return run
    }

    /// Why the run's accounting does not hold, or nil when it does: the summary adds up to the
    /// input, the rejections are exactly the bad tokens (once each), and the record (when kept)
    /// holds every good token exactly once and no bad one.
    static func ledger(_ run: Run, count: Int, bad: Set<Int>, record: String?) -> String? {
        func number(_ key: String) -> Int { run.summary[key] as? Int ?? 0 }
        let total = number("accepted") + number("rejected") + number("unconfirmed") + number("notSent")
        guard total == count, number("sent") == count else {
            return "accepted + rejected + unconfirmed + notSent = \(total), sent \(number("sent")), input \(count)"
        }
        guard number("rejected") == bad.count, number("accepted") == count - bad.count else {
            return "\(number("rejected")) rejected, \(number("accepted")) accepted; \(bad.count) tokens are bad"
        }
        let rejectedTokens = run.summary["rejectedTokens"] as? [String] ?? []
        let rejected = rejectedTokens.compactMap { Int($0.suffix(8), radix: 16) }
        guard rejected.count == bad.count, Set(rejected) == bad else {
            return "the rejected tokens are not the bad ones (\(rejected.count) named)"
        }
        guard let record else { return nil }
        guard let data = FileManager.default.contents(atPath: record) else { return "no record at \(record)" }
        var times = [UInt8](repeating: 0, count: count)
        let prefix = Array(#"{"token":""#.utf8)
        var lines = 0
        for line in data.split(separator: 0x0A) where line.starts(with: prefix) {
            lines += 1
            let hex = line.dropFirst(prefix.count + 56).prefix(8)
            guard let index = Int(String(decoding: hex, as: UTF8.self), radix: 16), index < count else {
                return "a recorded token is not one of the input's"
            }
            times[index] &+= 1
        }
        var missing = 0
        var twice = 0
        var badDelivered = 0
        for index in 0..<count {
            if bad.contains(index) {
                if times[index] != 0 { badDelivered += 1 }
            } else if times[index] == 0 {
                missing += 1
            } else if times[index] > 1 {
                twice += 1
            }
        }
        guard missing == 0, twice == 0, badDelivered == 0 else {
            return "record (\(lines) lines): \(missing) good tokens missing, \(twice) delivered more than once, "
                + "\(badDelivered) bad ones delivered"
        }
        return nil
    }
}

/// `legacy-push bridge` as a child process on a free port, delivering to a local `serve --http2`
/// with token auth, its log (stderr) in a file for the statistics line it prints when stopped.
final class BridgeProcess {
    let process = Process()
    let port: UInt16
    let log: String
    /// `http://HOST:PORT/metrics` when started with `--metrics`.
    let metricsURL: String?

    /// `ticketKey`: a session ticket key file the bridges of a fleet share (`--session-ticket-key`).
    init(
        upstreamPort: UInt16, store: String, log: String, metrics: Bool = false, ticketKey: String? = nil,
        extra: [String] = []
    ) throws {
        self.log = log
        process.executableURL = URL(fileURLWithPath: Package.cli)
        process.arguments =
            [
                "bridge", "--port", "0", "--no-feedback", "--upstream", "127.0.0.1:\(upstreamPort)",
                "--upstream-ca-file", Package.certs("ca.pem"), "--auth-key", Package.certs("AuthKey_ABC123DEFG.p8"),
                "--team-id", "DEF123GHIJ", "--store", store, "--quiet",
            ] + (metrics ? ["--metrics", "127.0.0.1:0"] : [])
            + (ticketKey.map { ["--session-ticket-key", $0] } ?? []) + extra
        process.environment = ProcessInfo.processInfo.environment.merging(["LEGACY_PUSH_FIXTURES": Package.certs("")]) {
            $1
        }
        let out = Pipe()
        process.standardOutput = out
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        var text = ""
        var port: UInt16?
        var metricsURL: String?
        while port == nil || (metrics && metricsURL == nil) {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
            // "listening on 127.0.0.1:41234 (binary, bridging to 127.0.0.1:2197)"
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }),
                let address = line.dropFirst("listening on ".count).split(separator: " ").first
            {
                port = UInt16(address.split(separator: ":").last ?? "")
            }
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("metrics on ") }) {
                metricsURL = String(line.dropFirst("metrics on ".count))
            }
        }
        guard let port else { throw HTTP2ServeBenchmarks.BenchmarkError("bridge did not start: \(text)") }
        self.port = port
        self.metricsURL = metricsURL
    }

    var cpuSeconds: Double? { Clock.cpu(of: process.processIdentifier) }

    /// The "stopped: ..." line, once stopped.
    var statistics: String? {
        guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return nil }
        return text.split(separator: "\n").last { $0.hasPrefix("stopped: ") }.map { String($0.dropFirst(9)) }
    }

    func stop() {
        guard process.isRunning else { return }
        process.interrupt()
        process.waitUntilExit()
    }
}
