import APNsRuntime
import Foundation
import LegacyAPNs
import Synchronization

/// What `--inbox` costs the binary simulator (`serve`): one invocation sends the same
/// notifications through one TLS connection to `serve` without an inbox, with `--inbox`, and with
/// `--inbox` and a client reading `/api/v1/stream` all along (what a browser with the page open
/// does), alternating the three in each run. The simulator's resident memory is read idle, once
/// the inbox's ring is full (after a tenth of the notifications) and at the end: a flat figure
/// from there to the end is the bound holding.
enum InboxBenchmarks {
    struct Run {
        var rate: Double
        var seconds: Double
        var simulatorCPU: Double
        var note: String
        var failed: Bool
    }

    static func run(quick: Bool, runs: Int, report: (BenchmarkResult) -> Void) async {
        let count = quick ? 200_000 : 1_000_000
        let input = EndToEndBenchmarks.notifications(count)
        let first = Array(input[..<(count / 10)])
        let rest = Array(input[(count / 10)...])
        let cases: [(name: String, flags: [String], streams: Bool)] = [
            ("inbox: serve, no inbox", [], false),
            ("inbox: serve --inbox", ["--inbox", "127.0.0.1:0"], false),
            ("inbox: serve --inbox, a client streaming", ["--inbox", "127.0.0.1:0"], true),
        ]
        var measured: [[Run]] = Array(repeating: [], count: cases.count)
        for _ in 0..<runs {
            for (index, entry) in cases.enumerated() {
                measured[index].append(
                    await once(first: first, rest: rest, flags: entry.flags, streams: entry.streams))
            }
        }
        let medians = measured.map { runs in runs.sorted { $0.rate < $1.rate }[runs.count / 2] }
        defer { http2(quick: quick, runs: runs, report: report) }
        for (index, entry) in cases.enumerated() {
            let median = medians[index]
            let ratio =
                index == 0 ? "" : "\(String(format: "%.1f", 100 * median.rate / medians[0].rate)) % of no inbox; "
            report(
                BenchmarkResult(
                    name: entry.name, count: count, seconds: median.seconds, unit: "notifs",
                    cpuSeconds: median.simulatorCPU,
                    note: ratio + median.note + "; runs "
                        + measured[index].map { BenchmarkResult.human($0.rate) }.joined(separator: ", ")
                        + (measured[index].contains { $0.failed } ? " FAILED" : "")))
        }
    }

    /// The HTTP/2 simulator: h2load (one connection, 1,000 streams, token auth, a ~100-byte
    /// POST) against `serve --http2` without an inbox and with `--inbox`, alternating; every
    /// accepted request is then a record (its request boxed, a fate, an `apns-unique-id`).
    static func http2(quick: Bool, runs: Int, report: (BenchmarkResult) -> Void) {
        let count = quick ? 50_000 : 300_000
        do {
            let tools = try HTTP2ServeBenchmarks.Tools()
            let scratch = NSTemporaryDirectory() + "/legacy-push-inboxbench-\(getpid())"
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            let body = scratch + "/body.json"
            try Data(
                #"{"aps":{"alert":{"title":"Benchmark","body":"A notification of about one hundred bytes."}}}"#.utf8
            )
            .write(to: URL(fileURLWithPath: body))
            let key = try SigningKey(
                pemRepresentation: Array(
                    try Data(contentsOf: URL(fileURLWithPath: Package.certs("AuthKey_ABC123DEFG.p8")))))
            let token = try key.signProviderToken(
                keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: Int64(Date().timeIntervalSince1970))
            let headers = [
                "-H", "authorization: \(token.authorizationHeaderValue)", "-H", "apns-topic: com.example.legacy", "-H",
                "apns-push-type: alert",
            ]
            let auth = ["--auth-key", "ABC123DEFG:DEF123GHIJ:" + Package.certs("AuthKey_ABC123DEFG.p8")]
            let plain = try ServeHTTP2Process(auth)
            defer { plain.stop() }
            let inboxed = try ServeHTTP2Process(auth + ["--inbox", "127.0.0.1:0"])
            defer { inboxed.stop() }
            var without: [HTTP2ServeBenchmarks.H2Load] = []
            var with: [HTTP2ServeBenchmarks.H2Load] = []
            for _ in 0..<runs {
                for (server, into) in [(plain, 0), (inboxed, 1)] {
                    let cpu = server.cpuSeconds ?? 0
                    var run = try HTTP2ServeBenchmarks.H2Load.run(
                        tools.h2load, count: count, body: body, headers: headers, port: server.port)
                    run.serverCPU = (server.cpuSeconds ?? 0) - cpu
                    if into == 0 { without.append(run) } else { with.append(run) }
                }
            }
            let off = HTTP2ServeBenchmarks.H2Load.median(without)
            let on = HTTP2ServeBenchmarks.H2Load.median(with)
            for (name, median, all) in [
                ("inbox: serve --http2, no inbox", off, without), ("inbox: serve --http2 --inbox", on, with),
            ] {
                let ratio = median.rate / off.rate
                report(
                    BenchmarkResult(
                        name: name, count: median.count, seconds: median.seconds, unit: "req",
                        cpuSeconds: median.serverCPU,
                        note: (name.hasSuffix("--inbox")
                            ? "\(String(format: "%.1f", 100 * ratio)) % of no inbox; " : "")
                            + "h2load -c 1 -m 1000; \(median.succeeded) answered 200; simulator "
                            + "\(String(format: "%.2f", median.serverCPU ?? 0)) s CPU; runs "
                            + all.map { BenchmarkResult.human($0.rate) }.joined(separator: ", ")))
            }
        } catch {
            report(
                BenchmarkResult(
                    name: "inbox: serve --http2", count: 0, seconds: 1, unit: "req", note: "FAILED: \(error)"))
        }
    }

    static func once(first: [PushNotification], rest: [PushNotification], flags: [String], streams: Bool) async -> Run {
        do {
            let server = try ServeProcess(flags + ["--no-feedback"])
            defer { server.stop() }
            let idle = server.residentMB ?? 0
            let reader = streams ? try StreamReader(port: server.inboxPort ?? 0) : nil
            defer { reader?.stop() }
            let client = try EndToEndBenchmarks.client(port: server.gatewayPort, connections: 1)
            let cpu = server.cpuSeconds ?? 0
            let head = await client.send(first)
            let full = server.residentMB ?? 0
            let tail = await client.send(rest)
            let end = server.residentMB ?? 0
            let simulatorCPU = (server.cpuSeconds ?? 0) - cpu
            let seconds = head.seconds + tail.seconds
            let accepted = head.accepted + tail.accepted
            let total = first.count + rest.count
            var note =
                "simulator \(String(format: "%.2f", simulatorCPU)) s CPU; RSS idle \(String(format: "%.1f", idle)) MB, "
                + "after \(first.count / 1000)k \(String(format: "%.1f", full)) MB, after \(total / 1000)k "
                + "\(String(format: "%.1f", end)) MB"
            if let reader {
                let (bytes, events) = reader.received
                note += "; stream read \(events) events, \(String(format: "%.0f", Double(bytes) / 1e6)) MB"
            }
            let failed = accepted != total || head.failure != nil || tail.failure != nil
            if failed { note += " FAILED: accepted \(accepted) of \(total)" }
            return Run(
                rate: Double(total) / seconds, seconds: seconds, simulatorCPU: simulatorCPU, note: note, failed: failed)
        } catch {
            return Run(rate: 0, seconds: 1, simulatorCPU: 0, note: "FAILED: \(error)", failed: true)
        }
    }

    /// A client of `/api/v1/stream` that reads everything it is sent, on a thread of its own,
    /// until stopped (as a browser with the page open).
    final class StreamReader: @unchecked Sendable {
        // @unchecked: the transport is used by the reading thread alone until `stop()` has seen it
        // end; the rest is atomics and locks.
        private let transport: TCPTransport
        private let stopping = Atomic<Bool>(false)
        private let counts = Mutex<(bytes: Int, events: Int)>((0, 0))
        private let done = Mutex<Bool>(false)

        init(port: UInt16) throws {
            let socket = try Socket.connect(host: "127.0.0.1", port: port, timeout: 5)
            transport = TCPTransport(socket, peer: "inbox")
            _ = transport.writeAll(Array("GET /api/v1/stream HTTP/1.1\r\nHost: inbox\r\n\r\n".utf8), timeout: 5)
            let thread = Thread { [self] in read() }
            thread.start()
        }

        private func read() {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            var last: UInt8 = 0
            while !stopping.load(ordering: .relaxed) {
                let result = buffer.withUnsafeMutableBytes { transport.read(into: $0, waitingUpTo: 0.2) }
                guard case .done(let count) = result else {
                    if case .wantRead = result { continue }
                    break
                }
                var events = 0
                for byte in buffer[0..<count] {
                    if byte == 0x0A, last == 0x0A { events += 1 }
                    last = byte
                }
                counts.withLock {
                    $0.bytes += count
                    $0.events += events
                }
            }
            done.withLock { $0 = true }
        }

        /// Bytes and events (blank lines: the stream's two comment lines count as one) read so far.
        var received: (bytes: Int, events: Int) { counts.withLock { $0 } }

        func stop() {
            stopping.store(true, ordering: .relaxed)
            while !done.withLock({ $0 }) { usleep(10_000) }
            transport.close()
        }
    }
}
