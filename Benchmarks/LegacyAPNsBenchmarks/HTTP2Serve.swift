import APNsRuntime
import Foundation
import GatewaySimulator

/// `http2-serve`: h2load against `legacy-push serve --http2` (token auth, a valid bearer token made
/// by our signer) and against nghttpd (nghttp2's C reference server) in the same invocation, the
/// same load for both: one connection, `-m 1000` streams at once, a ~100-byte POST to
/// `/3/device/<token>`. Prints both request rates and their ratio, then the simulator's memory over
/// 1,000,000 requests on one connection (resident size after a warm-up and peak at the end).
///
/// nghttpd serves a static file at that path (a 3-byte `{}` and a newline), so both answer 200
/// after reading the body (issue #30's measure; nghttpd answered the 404 of a missing file more
/// slowly than it serves the file); ours checks the token, validates the request and generates an
/// apns-id and an apns-unique-id.
enum HTTP2ServeBenchmarks {
    static let hex = String(repeating: "ab", count: 32)

    static func run(quick: Bool, runs: Int, report: @Sendable (BenchmarkResult) -> Void) async {
        let count = quick ? 50_000 : 300_000
        do {
            let tools = try Tools()
            let scratch = NSTemporaryDirectory() + "/legacy-push-h2bench-\(getpid())"
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            // nghttpd's document root holds the file the requests' path names.
            try FileManager.default.createDirectory(
                atPath: scratch + "/3/device", withIntermediateDirectories: true)
            try Data("{}\n".utf8).write(to: URL(fileURLWithPath: scratch + "/3/device/" + hex))
            let body = scratch + "/body.json"
            let payload =
                #"{"aps":{"alert":{"title":"Benchmark","body":"A notification of about one hundred bytes."}}}"#
            try Data(payload.utf8).write(to: URL(fileURLWithPath: body))
            let key = try SigningKey(
                pemRepresentation: Array(
                    try Data(contentsOf: URL(fileURLWithPath: Package.certs("AuthKey_ABC123DEFG.p8")))))
            let token = try key.signProviderToken(
                keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: Int64(Date().timeIntervalSince1970))
            let headers = [
                "-H", "authorization: \(token.authorizationHeaderValue)", "-H", "apns-topic: com.example.legacy", "-H",
                "apns-push-type: alert",
            ]

            let ours = try ServeHTTP2Process([
                "--auth-key", "ABC123DEFG:DEF123GHIJ:" + Package.certs("AuthKey_ABC123DEFG.p8"),
            ])
            defer { ours.stop() }
            let reference = try NghttpdProcess(tools.nghttpd, root: scratch)
            defer { reference.stop() }

            var oursRuns: [H2Load] = []
            var referenceRuns: [H2Load] = []
            for _ in 0..<runs {
                let cpu = ours.cpuSeconds ?? 0
                var mine = try H2Load.run(tools.h2load, count: count, body: body, headers: headers, port: ours.port)
                mine.serverCPU = (ours.cpuSeconds ?? 0) - cpu
                oursRuns.append(mine)
                let referenceCPU = reference.cpuSeconds ?? 0
                var theirs = try H2Load.run(
                    tools.h2load, count: count, body: body, headers: headers, port: reference.port)
                theirs.serverCPU = (reference.cpuSeconds ?? 0) - referenceCPU
                referenceRuns.append(theirs)
            }
            let mine = H2Load.median(oursRuns)
            let theirs = H2Load.median(referenceRuns)
            let ratio = mine.rate / theirs.rate
            report(
                BenchmarkResult(
                    name: "http2-serve: serve --http2, token auth", count: mine.count, seconds: mine.seconds,
                    unit: "req", cpuSeconds: mine.serverCPU,
                    note: "h2load -c 1 -m 1000; \(mine.succeeded) of \(mine.count) answered 200; "
                        + repeatedNote(oursRuns)
                        + "\(String(format: "%.0f", 100 * ratio)) % of nghttpd; runs \(oursRuns.map { BenchmarkResult.human($0.rate) }.joined(separator: ", "))/s"
                ))
            report(
                BenchmarkResult(
                    name: "http2-serve: nghttpd (C reference)", count: theirs.count, seconds: theirs.seconds,
                    unit: "req",
                    cpuSeconds: theirs.serverCPU,
                    note:
                        "same load; serves a static file (200); runs \(referenceRuns.map { BenchmarkResult.human($0.rate) }.joined(separator: ", "))/s"
                ))

            // Memory over 1,000,000 requests on one connection (fresh simulator).
            let total = quick ? 200_000 : 1_000_000
            let fresh = try ServeHTTP2Process([
                "--auth-key", "ABC123DEFG:DEF123GHIJ:" + Package.certs("AuthKey_ABC123DEFG.p8"),
            ])
            defer { fresh.stop() }
            let warm = try H2Load.run(tools.h2load, count: 20_000, body: body, headers: headers, port: fresh.port)
            let afterWarmUp = fresh.memory.resident
            let long = try H2Load.run(tools.h2load, count: total, body: body, headers: headers, port: fresh.port)
            let end = fresh.memory
            report(
                BenchmarkResult(
                    name: "http2-serve: memory over \(total / 1000)k requests", count: long.count,
                    seconds: long.seconds,
                    unit: "req", peakMemoryMB: end.peak,
                    note: "resident \(String(format: "%.1f", afterWarmUp)) MB after \(warm.count / 1000)k, "
                        + "\(String(format: "%.1f", end.resident)) MB after \(total / 1000)k more; \(long.succeeded) answered 200"
                ))
        } catch {
            report(BenchmarkResult(name: "http2-serve", count: 0, seconds: 1, unit: "req", note: "FAILED: \(error)"))
        }
    }

    /// Says how many runs were repeated because h2load's first flight raced the SETTINGS.
    static func repeatedNote(_ runs: [H2Load]) -> String {
        let repeated = runs.reduce(0) { $0 + $1.repeated }
        guard repeated > 0 else { return "" }
        return "\(repeated) run(s) repeated (h2load's first flight beat the token connection's SETTINGS); "
    }

    /// h2load and nghttpd, from PATH or Debian's places.
    struct Tools {
        let h2load: String
        let nghttpd: String

        init() throws {
            func find(_ name: String, package: String) throws -> String {
                let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
                for folder in folders + ["/usr/bin", "/usr/sbin"]
                where FileManager.default.isExecutableFile(atPath: folder + "/" + name) {
                    return folder + "/" + name
                }
                throw BenchmarkError("\(name) is not installed (apt-get install \(package))")
            }
            h2load = try find("h2load", package: "nghttp2-client")
            nghttpd = try find("nghttpd", package: "nghttp2-server")
        }
    }

    struct BenchmarkError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// One h2load run, read from its summary.
    struct H2Load {
        var count: Int
        var succeeded: Int
        var seconds: Double
        var serverCPU: Double?
        var rate: Double { Double(count) / seconds }

        /// Runs lost to h2load's first flight and run again (see `run`).
        var repeated = 0

        /// One h2load run. h2load sends its first 1,000 requests before the server's SETTINGS
        /// arrive, so against a token connection (one stream until the first valid token, as
        /// APNs) the simulator may end the connection in that first flight with GOAWAY "Maximum
        /// active streams violated" (a race in the client, not a loss). Such a run, one that ends
        /// within its first flight, is run again, up to four more times, and counted in
        /// `repeated`; any other short run fails the benchmark.
        static func run(_ h2load: String, count: Int, body: String, headers: [String], port: UInt16) throws -> H2Load {
            var repeated = 0
            while true {
                do {
                    var result = try once(h2load, count: count, body: body, headers: headers, port: port)
                    result.repeated = repeated
                    return result
                } catch is FirstFlightLost where repeated < 4 {
                    repeated += 1
                }
            }
        }

        /// A run that ended within h2load's first flight of 1,000 streams.
        struct FirstFlightLost: Error, CustomStringConvertible {
            var description: String
        }

        private static func once(_ h2load: String, count: Int, body: String, headers: [String], port: UInt16) throws
            -> H2Load
        {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: h2load)
            process.arguments =
                ["-n", String(count), "-c", "1", "-m", "1000", "-d", body] + headers + [
                    "https://127.0.0.1:\(port)/3/device/\(HTTP2ServeBenchmarks.hex)"
                ]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let text = String(decoding: data, as: UTF8.self)
            // "finished in 1.66s, 12077.08 req/s, 979.39KB/s"
            // "requests: 20000 total, 20000 started, 20000 done, 20000 succeeded, 0 failed, ..."
            guard let finished = text.split(separator: "\n").first(where: { $0.hasPrefix("finished in ") }),
                let done = text.split(separator: "\n").first(where: { $0.hasPrefix("requests: ") })
            else { throw BenchmarkError("h2load printed no summary: \(text.suffix(300))") }
            let rate = Double(finished.split(separator: ",")[1].split(separator: " ")[0]) ?? 0
            let fields = done.dropFirst("requests: ".count).split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            let completed = Int(fields.first { $0.hasSuffix(" done") }?.split(separator: " ").first ?? "") ?? 0
            let status = text.split(separator: "\n").first { $0.hasPrefix("status codes: ") }
            let ok = Int(status?.dropFirst("status codes: ".count).split(separator: " ").first ?? "") ?? 0
            if completed < min(count, 1000) {
                throw FirstFlightLost(description: "h2load completed \(completed) of \(count): \(text.suffix(400))")
            }
            guard completed == count, rate > 0 else {
                throw BenchmarkError("h2load completed \(completed) of \(count): \(text.suffix(400))")
            }
            return H2Load(count: count, succeeded: ok, seconds: Double(count) / rate, serverCPU: nil)
        }

        static func median(_ runs: [H2Load]) -> H2Load { runs.sorted { $0.rate < $1.rate }[runs.count / 2] }
    }
}

/// `legacy-push serve --http2` as a child process on a free port.
final class ServeHTTP2Process {
    let process = Process()
    let port: UInt16

    init(_ extra: [String]) throws {
        process.executableURL = URL(fileURLWithPath: Package.cli)
        process.arguments = ["serve", "--http2", "--port", "0", "--quiet"] + extra
        process.environment = ProcessInfo.processInfo.environment.merging(["LEGACY_PUSH_FIXTURES": Package.certs("")]) {
            $1
        }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        var port: UInt16?
        while port == nil {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }) {
                port = UInt16(line.split(separator: ":").last!.split(separator: " ").first!)
            }
        }
        guard let port else { throw HTTP2ServeBenchmarks.BenchmarkError("serve --http2 did not start: \(text)") }
        self.port = port
    }

    var cpuSeconds: Double? { Clock.cpu(of: process.processIdentifier) }

    /// Resident and peak resident size in MB (/proc/<pid>/status VmRSS, VmHWM).
    var memory: (resident: Double, peak: Double) { ProcMemory.read(process.processIdentifier) }

    func stop() {
        guard process.isRunning else { return }
        process.interrupt()
        process.waitUntilExit()
    }
}

/// nghttpd (one worker, TLS with the fixture server certificate) on a free port.
final class NghttpdProcess {
    let process = Process()
    let port: UInt16

    init(_ executable: String, root: String) throws {
        port = try Listener(host: "127.0.0.1", port: 0).endpoint.port  // free now, closed again at once
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-d", root, String(port), Package.certs("server.key"), Package.certs("server.pem")]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if (try? Socket.connect(host: "127.0.0.1", port: port, timeout: 1)) != nil { return }
            usleep(20_000)
        }
        throw HTTP2ServeBenchmarks.BenchmarkError("nghttpd did not listen on \(port)")
    }

    var cpuSeconds: Double? { Clock.cpu(of: process.processIdentifier) }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)  // nghttpd ignores SIGTERM when started from a thread that blocks it
        process.waitUntilExit()
    }
}

enum ProcMemory {
    static func read(_ pid: Int32) -> (resident: Double, peak: Double) {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return (0, 0) }
        func field(_ name: String) -> Double {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return (Double(line.split(separator: " ").dropFirst().first ?? "") ?? 0) / 1024
        }
        return (field("VmRSS"), field("VmHWM"))
    }
}
