import APNsRuntime
import Foundation
import LegacyAPNs

enum Sample {
    /// A 32-byte token and a pre-serialised payload of exactly 100 bytes.
    static let notification: PushNotification = {
        let payload =
            #"{"aps":{"alert":"You have a new message from Caroline","badge":3,"sound":"ping.aiff"},"m":"xxxxxxx"}"#
        precondition(payload.utf8.count == 100)
        return PushNotification(
            token: try! DeviceToken(hexString: "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"),
            payload: Payload(unvalidatedBytes: Array(payload.utf8)), identifier: 1,
            expiration: Expiration(rawValue: 0), priority: .immediate)
    }()
}

enum EncodeBenchmarks {
    /// The connection's hot path: encode into a reusable buffer, hand it off every 16 KiB.
    static func encode(_ notification: PushNotification, format: FrameFormat, count: Int) -> (
        seconds: Double, bytes: Int
    ) {
        var writer = ByteWriter(capacity: 32 * 1024)
        var bytes = 0
        let start = Clock.now()
        for index in 0..<count {
            FrameEncoder.encodeValidated(
                notification, as: format, identifier: UInt32(truncatingIfNeeded: index), into: &writer)
            if writer.count >= 16 * 1024 {
                bytes += writer.count
                writer.clear()
            }
        }
        bytes += writer.count
        return (Clock.now() - start, bytes)
    }

    static func run(quick: Bool, report: (BenchmarkResult) -> Void) {
        let count = quick ? 2_000_000 : 20_000_000
        for (format, name) in [
            (FrameFormat.enhanced, "encode enhanced (cmd 1), 100 B payload"),
            (.itemized, "encode item frame (cmd 2), 100 B payload"),
        ] {
            _ = encode(Sample.notification, format: format, count: count / 10)  // warm up
            let cpu = Clock.processCPU()
            let (seconds, bytes) = encode(Sample.notification, format: format, count: count)
            report(
                BenchmarkResult(
                    name: name, count: count, seconds: seconds, unit: "frames", cpuSeconds: Clock.processCPU() - cpu,
                    bytes: bytes,
                    note: "one thread, reusable 32 KiB buffer"))
        }

        // Validation on (what FrameEncoder.encode does for callers).
        do {
            let encoder = FrameEncoder()
            var writer = ByteWriter(capacity: 32 * 1024)
            let start = Clock.now()
            let notification = Sample.notification
            for index in 0..<count {
                try! encoder.encode(
                    notification, as: .enhanced, identifier: UInt32(truncatingIfNeeded: index), into: &writer)
                if writer.count >= 16 * 1024 { writer.clear() }
            }
            report(
                BenchmarkResult(
                    name: "encode enhanced with validation", count: count, seconds: Clock.now() - start, unit: "frames")
            )
        }

        // Building the payload each time (PayloadBuilder + encode).
        let builderCount = count / 20
        var writer = ByteWriter(capacity: 32 * 1024)
        let start = Clock.now()
        for index in 0..<builderCount {
            var builder = PayloadBuilder(
                alert: "You have a new message from Caroline", badge: index & 7, sound: "ping.aiff")
            builder.setCustomKey("m", to: "xxxxxxx")
            let notification = PushNotification(token: Sample.notification.token, payload: try! builder.build())
            FrameEncoder.encodeValidated(
                notification, as: .enhanced, identifier: UInt32(truncatingIfNeeded: index), into: &writer)
            if writer.count >= 16 * 1024 { writer.clear() }
        }
        report(
            BenchmarkResult(
                name: "PayloadBuilder + encode enhanced", count: builderCount, seconds: Clock.now() - start,
                unit: "frames"))
    }

    /// For `valgrind --tool=memcheck`: encodes `count` frames; heap allocations must not grow with
    /// `count` (see Scripts/check-allocations.sh).
    static func encodeOnly(count: Int) {
        let (_, bytes) = encode(Sample.notification, format: .enhanced, count: count)
        if bytes == 0 { print("nothing encoded") }
    }
}

enum DecodeBenchmarks {
    static func run(quick: Bool, report: (BenchmarkResult) -> Void) {
        let framesPerChunk = 2_000
        var writer = ByteWriter()
        for index in 0..<framesPerChunk {
            FrameEncoder.encodeValidated(Sample.notification, as: .enhanced, identifier: UInt32(index), into: &writer)
        }
        let block = writer.bytes
        let repeats = quick ? 250 : 2_500
        var decoder = FrameDecoder(configuration: .gateway)
        var frames = 0
        let start = Clock.now()
        block.withUnsafeBytes { raw in
            for _ in 0..<repeats {
                var offset = 0
                while offset < raw.count {  // 64 KiB reads, like the simulator
                    let end = min(raw.count, offset + 65_536)
                    decoder.append(UnsafeRawBufferPointer(rebasing: raw[offset..<end]))
                    offset = end
                    while let frame = try! decoder.next() {
                        if case .notification = frame { frames += 1 }
                    }
                }
            }
        }
        report(
            BenchmarkResult(
                name: "decode enhanced (FrameDecoder, 64 KiB reads)", count: frames, seconds: Clock.now() - start,
                unit: "frames", bytes: block.count * repeats))
    }
}

enum ParseBenchmarks {
    /// The JSON Lines parser alone (what `send --input` does in its first pass).
    static func run(quick: Bool, report: (BenchmarkResult) -> Void) {
        let count = quick ? 200_000 : 1_000_000
        var text: [UInt8] = []
        for index in 0..<count {
            text += Array(
                (#"{"token":"74747474747474747474747474747474747474747474747474747474"#
                    + String(index, radix: 16)
                    .leftPadded(to: 8)
                    + #"","payload":{"aps":{"alert":"You have a new message","badge":3,"sound":"ping.aiff"},"n":\#(index)}}"#
                    + "\n").utf8)
        }
        let parser = NotificationLineParser()
        let encoder = FrameEncoder()
        var lines = 0
        var payloadBytes = 0
        let start = Clock.now()
        text.withUnsafeBytes { raw in
            var lineStart = 0
            var lineNumber = 0
            for index in 0..<raw.count where raw[index] == 0x0A {
                lineNumber += 1
                let line = UnsafeRawBufferPointer(rebasing: raw[lineStart..<index])
                lineStart = index + 1
                _ = try! parser.withParsedLine(line, lineNumber: lineNumber) { parsed in
                    try parsed.validate(encoder: encoder, format: .enhanced)
                    payloadBytes += parsed.payload.count
                    lines += 1
                }
            }
        }
        report(
            BenchmarkResult(
                name: "parse + validate JSON Lines (no allocation)", count: lines, seconds: Clock.now() - start,
                unit: "lines",
                bytes: text.count, note: "\(payloadBytes / max(1, lines)) B payloads"))
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
