import Foundation
import LegacyAPNs

/// `cli-floor`: what `legacy-push send --input` costs against what the TLS connection alone costs.
///
/// The same 200,000 notifications (100-byte payloads, about 40 MB of JSON Lines) go into one
/// `serve --quiet`, alternately (a) from `legacy-push send --input FILE` and (b) from `tls-floor`
/// (Benchmarks/TLSFloor/main.c), which writes the identical frames, pre-encoded in a file (29 MB),
/// straight through OpenSSL in 16 KiB `SSL_write`s and waits for the answer to the closing
/// barrier. Both are child processes with the same certificate and trust; their CPU (user + system,
/// from `wait4`) is the figure, the median of the runs, and the ratio is (a) over (b).
enum CLIFloorBenchmarks {
    static func run(quick: Bool, runs: Int, report: (BenchmarkResult) -> Void) {
        let count = quick ? 50_000 : 200_000
        let directory = NSTemporaryDirectory() + "/legacy-push-floor-\(getpid())"
        let input = directory + "/input.jsonl"
        let frames = directory + "/frames.bin"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func failed(_ why: String) {
            report(BenchmarkResult(name: "cli-floor", count: 0, seconds: 1, unit: "notifs", note: "FAILED: \(why)"))
        }
        guard FileManager.default.fileExists(atPath: Package.floorClient) else {
            return failed("\(Package.floorClient) is missing: run swift build -c release first")
        }
        let sizes: (input: Int, frames: Int)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            sizes = try writeInputs(count: count, jsonLines: input, frames: frames)
        } catch {
            return failed("cannot write the inputs: \(error)")
        }
        guard let server = try? ServeProcess(["--no-feedback"]) else { return failed("serve did not start") }
        defer { server.stop() }
        let gateway = "127.0.0.1:\(server.gatewayPort)"
        let cli: [String] = [
            "send", "--input", input, "--gateway", gateway, "--ca-file", Package.certs("ca.pem"),
            "--cert", Package.certs("universal-modern.p12"), "--passphrase-file", Package.certs("passphrase.txt"),
            "--quiet",
        ]
        let floor: [String] = [
            "127.0.0.1", String(server.gatewayPort), Package.certs("ca.pem"), Package.certs("universal-modern.p12"),
            Package.certs("passphrase.txt"), frames,
        ]
        var sends: [Measured.Outcome] = []
        var floors: [Measured.Outcome] = []
        for _ in 0..<runs {
            sends.append(Measured.run(Package.cli, cli))
            floors.append(Measured.run(Package.floorClient, floor))
        }
        let send = median(sends)
        let floorRun = median(floors)
        let ratio = send.cpuSeconds / max(floorRun.cpuSeconds, 1e-6)
        let failures =
            sends.filter { $0.status != 0 }.count + floors.filter { $0.status != 0 }.count > 0
            ? "; FAILED: exit statuses send \(sends.map(\.status)), floor \(floors.map(\.status))" : ""
        report(
            BenchmarkResult(
                name: "cli-floor: send --input \(count / 1000)k lines", count: count, seconds: send.seconds,
                unit: "notifs", cpuSeconds: send.cpuSeconds, bytes: sizes.input, peakMemoryMB: send.peakMemoryMB,
                note: "client CPU \(milliseconds(send.cpuSeconds)) (runs \(range(sends)))\(failures)"))
        report(
            BenchmarkResult(
                name: "cli-floor: TLS floor, pre-encoded frames", count: count, seconds: floorRun.seconds,
                unit: "notifs", cpuSeconds: floorRun.cpuSeconds, bytes: sizes.frames,
                peakMemoryMB: floorRun.peakMemoryMB,
                note: "client CPU \(milliseconds(floorRun.cpuSeconds)) (runs \(range(floors)))"))
        report(
            BenchmarkResult(
                name: "cli-floor: ratio send / floor", count: count, seconds: send.seconds, unit: "notifs",
                note: String(format: "%.2fx client CPU (median %d alternating runs each)", ratio, runs)))
    }

    /// The run with the median CPU.
    static func median(_ outcomes: [Measured.Outcome]) -> Measured.Outcome {
        outcomes.sorted { $0.cpuSeconds < $1.cpuSeconds }[outcomes.count / 2]
    }

    static func range(_ outcomes: [Measured.Outcome]) -> String {
        let sorted = outcomes.map(\.cpuSeconds).sorted()
        return "\(milliseconds(sorted.first!))-\(milliseconds(sorted.last!))"
    }

    static func milliseconds(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }

    /// Writes `count` JSON Lines (about 200 bytes each: a 32-byte token, a 100-byte payload, an id)
    /// and the frames `send` would write for them (enhanced, wire identifiers 1...count, no expiry)
    /// followed by the confirmation barrier. Returns both sizes.
    static func writeInputs(count: Int, jsonLines: String, frames: String) throws -> (input: Int, frames: Int) {
        var lines: [UInt8] = []
        var writer = ByteWriter(capacity: 1 << 20)
        lines.reserveCapacity(1 << 20)
        guard FileManager.default.createFile(atPath: jsonLines, contents: nil),
            FileManager.default.createFile(atPath: frames, contents: nil),
            let linesFile = FileHandle(forWritingAtPath: jsonLines),
            let framesFile = FileHandle(forWritingAtPath: frames)
        else { throw CocoaError(.fileWriteUnknown) }
        var sizes = (input: 0, frames: 0)
        func flush(final: Bool) throws {
            if final || lines.count >= 1 << 20 {
                try linesFile.write(contentsOf: lines)
                sizes.input += lines.count
                lines.removeAll(keepingCapacity: true)
            }
            if final || writer.count >= 1 << 20 {
                let bytes = writer.bytes
                try framesFile.write(contentsOf: bytes)
                sizes.frames += bytes.count
                writer.clear()
            }
        }
        for index in 1...count {
            let token = String(repeating: "74", count: 28) + String(format: "%08x", index)
            let start = #"{"aps":{"alert":"You have a new message","badge":3,"sound":"ping.aiff"},"n":\#(index),"x":""#
            let payload = start + String(repeating: "y", count: 100 - start.utf8.count - 2) + #""}"#
            precondition(payload.utf8.count == 100)
            lines += Array(#"{"token":"\#(token)","payload":\#(payload),"id":\#(index)}"#.utf8) + [0x0A]
            let notification = PushNotification(
                token: try DeviceToken(hexString: token), payload: Payload(unvalidatedBytes: Array(payload.utf8)))
            FrameEncoder.encodeValidated(notification, as: .enhanced, identifier: UInt32(index), into: &writer)
            try flush(final: false)
        }
        ConfirmationBarrier.encode(
            identifier: UInt32(truncatingIfNeeded: count) &+ DeliveryStateMachine.barrierIdentifierOffset,
            into: &writer)
        try flush(final: true)
        try linesFile.close()
        try framesFile.close()
        return sizes
    }
}
