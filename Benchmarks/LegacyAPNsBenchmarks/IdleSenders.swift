import APNsCore
import APNsCredentials
import APNsRuntime
import Foundation
import LegacyAPNs

/// `idle-senders`: one `legacy-push bridge` process holding many idle sender connections. Each
/// connection completes its TLS handshake and sends one notification (delivered to `serve
/// --http2`), then stays open and quiet; once the bridge has parked them all (its thread count
/// back to where it was), the bridge's resident memory per connection is measured from
/// `/proc/PID/status` (VmRSS before the first and after the last), and a new sender's whole
/// send (`PushClient`, connect to confirmation) is timed while they are held.
enum IdleSendersBenchmarks {
    static func run(quick: Bool, report: @Sendable (BenchmarkResult) -> Void) async {
        var count = quick ? 2_000 : 10_000
        // One descriptor a connection here and one in the bridge once parked (two while a thread
        // serves it: the socket and its session's eventfd): raised for this process and the
        // bridge it starts; fewer connections, said in the name, where it cannot be.
        var limits = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits)
        let wanted = rlim_t(count + 5_000)
        if limits.rlim_cur < wanted {
            var raised = rlimit(rlim_cur: wanted, rlim_max: Swift.max(wanted, limits.rlim_max))
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) != 0 {
                raised = rlimit(rlim_cur: limits.rlim_max, rlim_max: limits.rlim_max)
                _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised)
                count = Swift.min(count, Int(limits.rlim_max) - 5_000)
            }
        }
        let scratch = NSTemporaryDirectory() + "/legacy-push-idlebench-\(getpid())"
        do {
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            let serve = try ServeHTTP2Process([
                "--auth-key", "ABC123DEFG:DEF123GHIJ:" + Package.certs("AuthKey_ABC123DEFG.p8"),
            ])
            defer { serve.stop() }
            let bridge = try BridgeProcess(
                upstreamPort: serve.port, store: scratch + "/bridge.sqlite", log: scratch + "/bridge.log",
                extra: ["--max-connections", String(count + 100), "--park-after", "2"])
            defer { bridge.stop() }
            let pid = bridge.process.processIdentifier
            let tls = try Package.senderTLS()
            let context = try TLSContext.client(tls)
            let endpoint = Endpoint(host: "127.0.0.1", port: bridge.port)
            // One sender first: the bridge's threads and memory with one connection's worth of
            // warm-up (the upstream connected, the TLS code paged in).
            try sendOne(context: context, endpoint: endpoint, index: 0)?.close()
            try await Task.sleep(for: .seconds(3))
            let before = status(pid)
            let started = Clock.now()
            var senders: [TLSSession] = []
            senders.reserveCapacity(count)
            for index in 1...count {
                do {
                    guard let sender = try sendOne(context: context, endpoint: endpoint, index: index) else {
                        throw HTTP2ServeBenchmarks.BenchmarkError("could not write")
                    }
                    senders.append(sender)
                } catch {
                    let log = (try? String(contentsOfFile: scratch + "/bridge.log", encoding: .utf8)) ?? ""
                    throw HTTP2ServeBenchmarks.BenchmarkError(
                        "sender \(index) of \(count): \(error); bridge threads \(status(pid).threads), descriptors "
                            + "\((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1), "
                            + ((try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8))?.split(
                                separator: "\n"
                            )
                            .first { $0.hasPrefix("Max open files") }.map(String.init) ?? "") + "; its log ends: "
                            + String(log.suffix(600)))
                }
            }
            let opened = Clock.now() - started
            // Parked once quiet for 2 s: the thread count comes back down.
            let deadline = Clock.now() + 120
            var held = status(pid)
            while held.threads > before.threads + 2, Clock.now() < deadline {
                try await Task.sleep(for: .milliseconds(500))
                held = status(pid)
            }
            // A new sender while they are held: connect, send, confirmation barrier.
            let client = try PushClient(
                configuration: PushClient.Configuration(
                    gateway: .custom(host: "127.0.0.1", port: bridge.port), tls: tls))
            let newStart = Clock.now()
            let newReport = await client.send([notification(count + 1)])
            let newSeconds = Clock.now() - newStart
            let perConnection = Double(held.rssKB - before.rssKB) / Double(count)
            report(
                BenchmarkResult(
                    name: "bridge: \(count / 1000)k idle sender connections held", count: count, seconds: opened,
                    unit: "conns",
                    note:
                        "opened (handshake + one notification each) at this rate; bridge RSS \(before.rssKB / 1024) MB "
                        + "-> \(held.rssKB / 1024) MB: \(String(format: "%.1f", perConnection)) KB a connection; "
                        + "threads \(before.threads) -> \(held.threads); a new sender meanwhile: "
                        + "\(String(format: "%.1f", newSeconds * 1000)) ms "
                        + (newReport.isCompleteSuccess ? "(delivered)" : "(FAILED: \(newReport))")))
            for sender in senders { sender.close() }
        } catch {
            report(BenchmarkResult(name: "idle-senders", count: 0, seconds: 1, unit: "conns", note: "FAILED: \(error)"))
        }
    }

    static func notification(_ index: Int) -> PushNotification {
        var bytes = [UInt8](repeating: 0xAB, count: 32)
        bytes[24..<32] = ArraySlice(withUnsafeBytes(of: UInt64(index).bigEndian) { Array($0) })
        return PushNotification(
            token: try! DeviceToken(bytes: bytes),
            payload: Payload(unvalidatedBytes: Array(#"{"aps":{"alert":"idle \#(index)"}}"#.utf8)),
            identifier: UInt32(index))
    }

    /// Connects, sends notification `index`, and returns the open connection (nil if the write failed).
    static func sendOne(context: TLSContext, endpoint: Endpoint, index: Int) throws -> TLSSession? {
        let session = try TLSSession.connect(to: endpoint, context: context, timeout: 10)
        var writer = ByteWriter(capacity: 256)
        FrameEncoder.encodeValidated(notification(index), as: .enhanced, identifier: UInt32(index), into: &writer)
        guard writer.bytes.withUnsafeBytes({ session.writeAll($0, timeout: 10) }) == nil else { return nil }
        return session
    }

    /// VmRSS (KB) and Threads of `pid`.
    static func status(_ pid: Int32) -> (rssKB: Int, threads: Int) {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
        }
        return (field("VmRSS"), field("Threads"))
    }
}
