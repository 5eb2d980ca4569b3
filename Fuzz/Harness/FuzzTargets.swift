import APNsCore
import APNsCredentials

/// Property checks for hostile input, shared by the libFuzzer binaries (`Scripts/fuzz.sh`) and the
/// test suite (which replays `Fixtures/fuzz`). Each target takes arbitrary bytes and stops the
/// process (`preconditionFailure`) when a property does not hold, which libFuzzer reports as a
/// finding.
public enum FuzzTargets {
    /// The targets by name.
    public static let all: [String: @Sendable (UnsafeRawBufferPointer) -> Void] = [
        "frame-decoder": frameDecoder,
        "feedback-decoder": feedbackDecoder,
        "error-response": errorResponse,
        "jsonl": jsonLines,
        "pkcs12": pkcs12,
        "provider-server": providerServer,
        "provider-response": providerResponse,
        "channel-api": channelAPI,
    ]

    // MARK: - frame-decoder

    /// Decoding is the same whole and in any split; every decoded frame encodes back to the bytes
    /// it came from (item frames: to an equal frame); errors point inside the input.
    public static func frameDecoder(_ data: UnsafeRawBufferPointer) {
        let whole = decodeFrames(data, chunkSizes: [data.count])
        let split = decodeFrames(data, chunkSizes: chunkPattern(data))
        check(whole.frames == split.frames, "frames differ between whole and split decoding")
        check(
            whole.error == split.error,
            "errors differ between whole and split decoding: \(whole.error.map { "\($0)" } ?? "none") vs \(split.error.map { "\($0)" } ?? "none")"
        )
        if let error = whole.error {
            check(
                error.offset >= error.frameOffset && error.offset <= data.count,
                "error offset \(error.offset) outside the frame")
            check(error.frameOffset == whole.consumed, "error frame offset is not where decoding stopped")
        } else {
            check(whole.consumed == data.count, "clean end but bytes left over")
        }
        var offset = 0
        for (frame, length) in zip(whole.frames, whole.lengths) {
            let original = Array(data[offset..<(offset + length)])
            offset += length
            var writer = ByteWriter()
            switch frame {
            case .errorResponse(let response):
                response.encode(into: &writer)
                check(writer.bytes == original, "error response does not re-encode to its bytes")
            case .notification(let notification, let command):
                let format: FrameFormat = command == .simple ? .simple : command == .enhanced ? .enhanced : .itemized
                FrameEncoder.encodeValidated(
                    notification, as: format, identifier: notification.identifier, into: &writer)
                if format == .itemized {
                    // Items may come in any order; the decoded frame must survive a round trip.
                    let again = decodeFrames(writer.withUnsafeReadableBytes { $0 }, chunkSizes: [writer.count])
                    check(again.frames == [frame], "item frame does not round-trip")
                } else {
                    check(writer.bytes == original, "\(command) frame does not re-encode to its bytes")
                }
            }
        }
    }

    struct Decoded {
        var frames: [Frame] = []
        var lengths: [Int] = []
        var error: FrameDecodingError?
        var consumed = 0
    }

    static func decodeFrames(_ data: UnsafeRawBufferPointer, chunkSizes: [Int]) -> Decoded {
        var decoder = FrameDecoder(configuration: .any)
        var result = Decoded()
        var index = 0
        var pattern = 0
        do {
            while index < data.count {
                let size = max(1, chunkSizes[pattern % chunkSizes.count])
                pattern += 1
                let end = min(data.count, index + size)
                decoder.append(UnsafeRawBufferPointer(rebasing: data[index..<end]))
                index = end
                while true {
                    let before = decoder.consumedByteCount
                    guard let frame = try decoder.next() else { break }
                    result.frames.append(frame)
                    result.lengths.append(decoder.consumedByteCount - before)
                }
            }
            try decoder.finish()
        } catch {
            result.error = error
        }
        result.consumed = decoder.consumedByteCount
        return result
    }

    /// Chunk sizes derived from the input, so every input also tests its own splits.
    static func chunkPattern(_ data: UnsafeRawBufferPointer) -> [Int] {
        var state = UInt64(data.count) &* 0x9E37_79B9_7F4A_7C15
        for byte in data.prefix(8) { state = (state ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return (0..<16).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1
            return Int(state >> 59) + 1  // 1...32
        }
    }

    // MARK: - feedback-decoder

    /// Tuples are the same whole and split, and encode back to their bytes.
    public static func feedbackDecoder(_ data: UnsafeRawBufferPointer) {
        let whole = decodeFeedback(data, chunkSizes: [data.count])
        let split = decodeFeedback(data, chunkSizes: chunkPattern(data))
        check(whole.records == split.records, "tuples differ between whole and split decoding")
        check((whole.error == nil) == (split.error == nil), "whole and split decoding disagree on failure")
        var writer = ByteWriter()
        for record in whole.records { record.encode(into: &writer) }
        check(writer.bytes == Array(data.prefix(writer.count)), "tuples do not re-encode to their bytes")
    }

    static func decodeFeedback(_ data: UnsafeRawBufferPointer, chunkSizes: [Int]) -> (
        records: [FeedbackRecord], error: (any Error)?
    ) {
        var decoder = FeedbackDecoder()
        var records: [FeedbackRecord] = []
        var index = 0
        var pattern = 0
        do {
            while index < data.count {
                let end = min(data.count, index + max(1, chunkSizes[pattern % chunkSizes.count]))
                pattern += 1
                decoder.append(UnsafeRawBufferPointer(rebasing: data[index..<end]))
                index = end
                while let record = try decoder.next() { records.append(record) }
            }
            try decoder.finish()
            return (records, nil)
        } catch {
            return (records, error)
        }
    }

    // MARK: - jsonl

    /// The line parser never crashes; what it accepts is a valid notification, the same through
    /// every entry point; what it refuses names the line.
    public static func jsonLines(_ data: UnsafeRawBufferPointer) {
        let parser = NotificationLineParser()
        let parsed: PushNotification?
        do {
            parsed = try parser.parse(data, lineNumber: 7)
        } catch let error as LegacyAPNsError {
            check(error.code == .malformedInput && error.reason.hasPrefix("line 7: "), "unexpected error \(error)")
            return
        } catch {
            preconditionFailure("unexpected error type \(error)")
        }
        guard let notification = parsed else { return }
        check((1...DeviceToken.maximumByteCount).contains(notification.token.count), "token length out of range")
        check(
            notification.payload.bytes.withUnsafeBytes { (try? Payload.validate($0)) != nil },
            "accepted payload is not JSON")
        let viaView = try? parser.withParsedLine(data, lineNumber: 7) { line in
            PushNotification(
                token: line.token, payload: Payload(unvalidatedBytes: Array(line.payload)), identifier: line.identifier,
                expiration: line.expiration, priority: line.priority)
        }
        check(viaView == notification, "withParsedLine and parse disagree")
    }

    // MARK: - pkcs12

    /// Credential loading never crashes and never hangs on hostile bytes.
    public static func pkcs12(_ data: UnsafeRawBufferPointer) {
        let bytes = Array(data)
        _ = CredentialFormat.detect(bytes)
        for passphrase in [nil, "secret"] as [String?] {
            if let identity = try? ClientIdentity(pkcs12: bytes, passphrase: passphrase) {
                _ = CertificateSummary(certificate: identity.certificate, privateKey: identity.privateKey, now: 0)
            }
            if let credentials = try? Credentials(bytes, passphrase: passphrase) {
                _ = CertificateSummary(credentials, now: 0)
                _ = credentials.certificate.topics
            }
        }
        if let certificate = try? Certificate(derRepresentation: bytes) {
            _ = certificate.topics
            _ = certificate.environment
            _ = certificate.subject
        }
    }

    // MARK: - error-response

    /// Drives a ``DeliveryStateMachine`` with gateway behaviour chosen by the bytes (error responses
    /// with any status and identifier, silent closes, timeouts, failed connects), then lets a
    /// well-behaved gateway finish. Every notification must end accepted, rejected or unconfirmed,
    /// exactly once.
    public static func errorResponse(_ data: UnsafeRawBufferPointer) {
        var machine = DeliveryStateMachine(
            configuration: .init(
                cacheCapacity: Int(data.first ?? 8) % 16 + 1, maximumAttempts: 3,
                reconnect: ReconnectPolicy(initialDelay: .zero, maximumConsecutiveFailures: 1_000_000)))
        let total = UInt64(data.count > 1 ? Int(data[1]) % 40 + 1 : 5)
        var next: UInt64 = 1
        var cursor = 2
        var written: [UInt32] = []
        var barrier: UInt32?
        var rejected = Set<UInt64>()
        var unconfirmed = Set<UInt64>()
        var accepted = 0
        func take() -> UInt8? {
            guard cursor < data.count else { return nil }
            defer { cursor += 1 }
            return data[cursor]
        }
        func collect() {
            for event in machine.takeEvents() {
                switch event {
                case .rejected(_, let rejection):
                    check(rejected.insert(rejection.position).inserted, "rejected twice")
                case .unconfirmed(_, let entry):
                    check(unconfirmed.insert(entry.position).inserted, "unconfirmed twice")
                case .confirmed(_, let count):
                    accepted += count
                default: break
                }
            }
        }
        var steps = 0
        loop: while steps < 10_000 {
            steps += 1
            let action = machine.nextAction()
            collect()
            let fuzzing = cursor < data.count
            switch action {
            case .connect:
                written = []
                barrier = nil
                if fuzzing, let byte = take(), byte % 5 == 0 {
                    machine.connectFailed(LegacyAPNsError(byte % 2 == 0 ? .connectionFailed : .timedOut, "fuzz"))
                } else {
                    machine.connected()
                }
            case .writeNew:
                if next > total {
                    machine.inputFinished()
                } else {
                    written.append(
                        machine.wroteNew(
                            PushNotification(
                                token: try! DeviceToken(bytes: [UInt8(next & 0xFF)]),
                                payload: Payload(unvalidatedBytes: [0x7B, 0x7D])), position: next))
                    next += 1
                }
            case .resend(let identifier, _):
                written.append(identifier)
            case .writeBarrier(let identifier):
                barrier = identifier
            case .awaitVerdict, .close:
                break
            case .finished:
                break loop
            }
            // The gateway's move.
            if action == .close {
                machine.closed(.unexpected(reason: "fuzz"))
                continue
            }
            guard machine.isWriting || action == .awaitVerdict else { continue }
            if fuzzing, let move = take() {
                switch move % 6 {
                case 0:
                    let status = StatusCode(rawValue: take() ?? 8)
                    let pick = Int(take() ?? 0)
                    let identifier: UInt32 =
                        pick % 7 == 6
                        ? UInt32(pick) &* 2_654_435_761
                        : written.isEmpty ? (barrier ?? 0) : written[pick % written.count]
                    machine.received(ErrorResponse(status: status, identifier: identifier))
                case 1:
                    machine.closed(.unexpected(reason: "fuzz"))
                case 2:
                    machine.verdictTimedOut()
                case 3:
                    _ = machine.inputStalled()
                default:
                    break  // keep writing
                }
            } else if action == .awaitVerdict, let barrier {
                machine.received(ErrorResponse(status: .missingDeviceToken, identifier: barrier))
            }
        }
        collect()
        let report = machine.report
        check(steps < 10_000, "the machine did not finish")
        check(report.sent == Int(total), "sent \(report.sent) of \(total)")
        check(rejected.isDisjoint(with: unconfirmed), "a notification is both rejected and unconfirmed")
        check(accepted == report.accepted, "confirmed events do not add up to the report")
        check(
            report.accepted + report.rejected.count + report.unconfirmed.count == report.sent, "verdicts do not add up")
    }

    @inline(__always)
    static func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
        if !condition() { preconditionFailure(message()) }
    }
}
