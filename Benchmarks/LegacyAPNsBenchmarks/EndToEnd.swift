import APNsRuntime
import FeedbackClient
import Foundation
import GatewaySimulator
import LegacyAPNs

enum EndToEndBenchmarks {
    static func client(port: UInt16, connections: Int) throws -> PushClient {
        let identity = try ClientIdentity(
            pkcs12: Array(try Data(contentsOf: URL(fileURLWithPath: Package.certs("universal-modern.p12")))),
            passphrase: "secret")
        let ca = Certificate.certificates(
            pemRepresentation: Array(try Data(contentsOf: URL(fileURLWithPath: Package.certs("ca.pem")))))
        var configuration = PushClient.Configuration(
            gateway: .custom(host: "127.0.0.1", port: port),
            tls: TLSConfiguration(identity: identity, trust: .certificates(ca)))
        configuration.connections = connections
        return try PushClient(configuration: configuration)
    }

    static func notifications(_ count: Int) -> [PushNotification] {
        (0..<count).map { index in
            var notification = Sample.notification
            var bytes = [UInt8](repeating: 0x74, count: 32)
            withUnsafeBytes(of: UInt64(index).bigEndian) { bytes.replaceSubrange(24..<32, with: $0) }
            notification.token = try! DeviceToken(bytes: bytes)
            notification.identifier = UInt32(truncatingIfNeeded: index)
            return notification
        }
    }

    /// With `rejecting`, the simulator refuses 1 % of the notifications (the resend cost);
    /// without, every notification is accepted.
    static func run(quick: Bool, rejecting: Bool, report: (BenchmarkResult) -> Void) async {
        // Every rejection costs a reconnect, so the 1 %-rejected cases send a quarter as many.
        let count = (quick ? 200_000 : 2_000_000) / (rejecting ? 4 : 1)
        let input = notifications(count)
        let cases: [(String, Int, [String])] =
            rejecting
            ? [
                ("end-to-end, 1 connection, 1 % rejected", 1, ["--fail-every", "100"]),
                ("end-to-end, 2 connections, 1 % rejected", 2, ["--fail-every", "100"]),
                ("end-to-end, 4 connections, 1 % rejected", 4, ["--fail-every", "100"]),
                ("end-to-end, 1 connection, 1 % rejected, TLS 1.3", 1, ["--fail-every", "100", "--tls-max", "1.3"]),
                ("end-to-end, 4 connections, 1 % rejected, TLS 1.3", 4, ["--fail-every", "100", "--tls-max", "1.3"]),
            ]
            : [
                ("end-to-end, 1 TLS connection", 1, []),
                ("end-to-end, 2 TLS connections", 2, []),
                ("end-to-end, 4 TLS connections", 4, []),
            ]
        for (name, connections, serveFlags) in cases where onlyCases.map({ name.contains($0) }) ?? true {
            do {
                let server = try ServeProcess(serveFlags + ["--no-feedback"])
                let client = try client(port: server.gatewayPort, connections: connections)
                let serverCPU = server.cpuSeconds ?? 0
                let cpu = Clock.processCPU()
                let sendReport = await client.send(input)
                let clientCPU = Clock.processCPU() - cpu
                let simulatorCPU = (server.cpuSeconds ?? 0) - serverCPU
                server.stop()
                let lost = sendReport.sent - sendReport.accepted - sendReport.rejected.count
                var note =
                    "client \(String(format: "%.2f", clientCPU)) s CPU + simulator \(String(format: "%.2f", simulatorCPU)) s CPU; "
                    + "\(sendReport.connections) TLS connections; accepted \(sendReport.accepted), rejected \(sendReport.rejected.count), "
                    + "resent \(sendReport.resent), unconfirmed \(sendReport.unconfirmed.count)"
                if lost != 0 || sendReport.failure != nil {
                    note += " FAILED: \(sendReport.failure?.reason ?? "lost \(lost)")"
                }
                report(
                    BenchmarkResult(
                        name: name, count: input.count, seconds: sendReport.seconds, unit: "notifs",
                        cpuSeconds: clientCPU + simulatorCPU, bytes: input.count * 145, note: note))
            } catch {
                report(BenchmarkResult(name: name, count: 0, seconds: 1, unit: "notifs", note: "FAILED: \(error)"))
            }
        }
    }
}

/// Runs a command and measures wall time, CPU time and peak memory (wait4's rusage).
enum Measured {
    struct Outcome {
        var status: Int32
        var seconds: Double
        var cpuSeconds: Double
        var peakMemoryMB: Double
    }

    static func run(_ path: String, _ arguments: [String], stdout: String = "/dev/null", stderr: String? = nil)
        -> Outcome
    {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        if let stderr { posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let start = Clock.now()
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        posix_spawn_file_actions_destroy(&actions)
        guard spawned == 0 else { return Outcome(status: -1, seconds: 0, cpuSeconds: 0, peakMemoryMB: 0) }
        // ru_maxrss would include this (large) process: Linux carries the parent's peak into a
        // vforked child at exec. VmHWM in /proc belongs to the child's own address space.
        var status: Int32 = 0
        var usage = rusage()
        var peakKB = 0
        while wait4(pid, &status, WNOHANG, &usage) == 0 {
            peakKB = max(peakKB, highWaterMark(of: pid) ?? 0)
            usleep(5_000)
        }
        let seconds = Clock.now() - start
        return Outcome(
            status: (status >> 8) & 0xFF, seconds: seconds,
            cpuSeconds: Clock.seconds(usage.ru_utime) + Clock.seconds(usage.ru_stime),
            peakMemoryMB: Double(peakKB) / 1024)
    }
}

/// The peak resident memory of a running process (VmHWM, in kB).
func highWaterMark(of pid: Int32) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
    else { return nil }
    return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
}

enum CLIBenchmarks {
    static func run(quick: Bool, report: (BenchmarkResult) -> Void) {
        let count = quick ? 100_000 : 1_000_000
        let path = NSTemporaryDirectory() + "/legacy-push-bench-\(getpid()).jsonl"
        defer { unlink(path) }
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let handle = FileHandle(forWritingAtPath: path)
        else {
            report(
                BenchmarkResult(name: "cli", count: 0, seconds: 1, unit: "lines", note: "FAILED: cannot write \(path)"))
            return
        }
        var chunk = ""
        for index in 1...count {
            chunk +=
                #"{"token":"74747474747474747474747474747474747474747474747474747474"# + String(format: "%08x", index)
                + #"","payload":{"aps":{"alert":"You have a new message","badge":3,"sound":"ping.aiff"},"n":\#(index)}}"#
                + "\n"
            if index % 10_000 == 0 {
                handle.write(Data(chunk.utf8))
                chunk = ""
            }
        }
        handle.write(Data(chunk.utf8))
        try? handle.close()
        let fileSize = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0

        guard let server = try? ServeProcess(["--no-feedback"]) else {
            report(
                BenchmarkResult(name: "cli", count: 0, seconds: 1, unit: "lines", note: "FAILED: serve did not start"))
            return
        }
        let serverCPU = server.cpuSeconds ?? 0
        let outcome = Measured.run(
            Package.cli,
            [
                "send", "--input", path, "--gateway", "127.0.0.1:\(server.gatewayPort)", "--ca-file",
                Package.certs("ca.pem"),
                "--cert", Package.certs("universal-modern.p12"), "--passphrase-file", Package.certs("passphrase.txt"),
                "--quiet",
            ])
        let simulatorCPU = (server.cpuSeconds ?? 0) - serverCPU
        server.stop()
        report(
            BenchmarkResult(
                name: "CLI: send --input \(count / 1000)k lines into serve", count: count, seconds: outcome.seconds,
                unit: "lines",
                cpuSeconds: outcome.cpuSeconds, bytes: fileSize, peakMemoryMB: outcome.peakMemoryMB,
                note:
                    "exit \(outcome.status); send CPU \(String(format: "%.2f", outcome.cpuSeconds)) s, serve CPU \(String(format: "%.2f", simulatorCPU)) s"
            ))
    }
}

enum FeedbackBenchmarks {
    /// Tuples decoded over TLS: an in-process simulator serves them, a FeedbackReader reads them.
    static func run(quick: Bool, report: (BenchmarkResult) -> Void) async {
        let count = quick ? 100_000 : 1_000_000
        do {
            let ca = Certificate.certificates(pemRepresentation: try bytes(Package.certs("ca.pem")))
            var configuration = GatewaySimulator.Configuration(
                identity: try ClientIdentity(
                    pem: try bytes(Package.certs("server.pem")), keyPEM: try bytes(Package.certs("server.key")),
                    passphrase: nil),
                clientTrust: ca)
            configuration.port = 0
            configuration.feedbackPort = 0
            configuration.feedback = (0..<count).map { index in
                var token = [UInt8](repeating: 0x5A, count: 32)
                withUnsafeBytes(of: UInt32(index).bigEndian) { token.replaceSubrange(28..<32, with: $0) }
                return FeedbackRecord(timestamp: UInt32(1_700_000_000 + index), token: try! DeviceToken(bytes: token))
            }
            let simulator = try GatewaySimulator(configuration: configuration)
            try await simulator.withRunning { endpoints in
                let identity = try ClientIdentity(
                    pkcs12: try bytes(Package.certs("universal-modern.p12")), passphrase: "secret")
                let reader = try FeedbackReader(
                    configuration: .init(
                        service: .custom(host: endpoints.feedback!.host, port: endpoints.feedback!.port),
                        tls: TLSConfiguration(identity: identity, trust: .certificates(ca))))
                let cpu = Clock.processCPU()
                let result = await reader.read()
                report(
                    BenchmarkResult(
                        name: "feedback: read tuples over TLS", count: result.records.count, seconds: result.seconds,
                        unit: "tuples", cpuSeconds: Clock.processCPU() - cpu, bytes: result.byteCount,
                        note:
                            "client and simulator in this process (CPU is both)\(result.failure.map { "; FAILED: \($0.reason)" } ?? "")"
                    ))
            }
        } catch {
            report(BenchmarkResult(name: "feedback", count: 0, seconds: 1, unit: "tuples", note: "FAILED: \(error)"))
        }
    }

    static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}

enum ReconnectBenchmarks {
    /// What one reconnect costs (what every rejected notification costs the sender): sequential
    /// TLS connections to an in-process simulator, with full handshakes and with resumed sessions,
    /// for a gateway speaking TLS 1.2 (the simulator's default, as Apple's) and TLS 1.3.
    static func run(quick: Bool, report: (BenchmarkResult) -> Void) async {
        for version in [TLSConfiguration.Version.tls12, .tls13] {
            await run(version: version, quick: quick, report: report)
        }
    }

    static func run(version: TLSConfiguration.Version, quick: Bool, report: (BenchmarkResult) -> Void) async {
        let count = quick ? 200 : 1000
        let label = version == .tls12 ? "TLS 1.2" : "TLS 1.3"
        do {
            let ca = Certificate.certificates(pemRepresentation: try FeedbackBenchmarks.bytes(Package.certs("ca.pem")))
            var configuration = GatewaySimulator.Configuration(
                identity: try ClientIdentity(
                    pem: try FeedbackBenchmarks.bytes(Package.certs("server.pem")),
                    keyPEM: try FeedbackBenchmarks.bytes(Package.certs("server.key")), passphrase: nil),
                clientTrust: ca)
            configuration.port = 0
            configuration.feedbackPort = nil
            configuration.maximumTLSVersion = version
            let simulator = try GatewaySimulator(configuration: configuration)
            try await simulator.withRunning { endpoints in
                let identity = try ClientIdentity(
                    pkcs12: try FeedbackBenchmarks.bytes(Package.certs("universal-modern.p12")), passphrase: "secret")
                let context = try TLSContext.client(TLSConfiguration(identity: identity, trust: .certificates(ca)))
                for resume in [false, true] {
                    var ticket: TLSTicket?
                    let resumedBefore = simulator.statistics.resumedConnections
                    let cpu = Clock.processCPU()
                    let start = Clock.now()
                    for _ in 0..<count {
                        let session = try TLSSession.connect(
                            to: endpoints.gateway, context: context, timeout: 5, resuming: resume ? ticket : nil)
                        // One byte of a frame makes the server answer (status 128 for command 9) and
                        // lets the TLS 1.3 ticket arrive, as on a real connection.
                        _ = [UInt8(9)].withUnsafeBytes { session.write($0) }
                        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
                        while case .wantRead = session.read(into: buffer) {
                            _ = session.wait(for: .readable, timeout: 1)
                        }
                        buffer.deallocate()
                        if resume { ticket = session.resumableTicket ?? ticket }
                        session.close()
                    }
                    report(
                        BenchmarkResult(
                            name: "reconnect, \(label), " + (resume ? "resumed session" : "full handshake"),
                            count: count, seconds: Clock.now() - start, unit: "conns",
                            cpuSeconds: Clock.processCPU() - cpu,
                            note:
                                "client and simulator in this process (CPU is both); "
                                + "\(simulator.statistics.resumedConnections - resumedBefore) resumed"))
                }
            }
        } catch {
            report(
                BenchmarkResult(
                    name: "reconnect, \(label)", count: 0, seconds: 1, unit: "conns", note: "FAILED: \(error)"))
        }
    }
}
