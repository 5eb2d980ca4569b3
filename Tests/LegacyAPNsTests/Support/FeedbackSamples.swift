import FeedbackClient
import GatewaySimulator
import LegacyAPNs

/// Feedback tuples for tests, and readers pointed at test services.
enum FeedbackSamples {
    /// A deterministic tuple: a `length`-byte token whose last 8 bytes are `index` (for length
    /// 8 and more), at `timestamp` (default: a time derived from `index`).
    static func record(_ index: Int, tokenLength: Int = 32, timestamp: UInt32? = nil) -> FeedbackRecord {
        var bytes = [UInt8](repeating: 0xC5, count: tokenLength)
        let tail = withUnsafeBytes(of: UInt64(index).bigEndian) { Array($0) }
        for offset in 0..<min(8, tokenLength) {
            bytes[tokenLength - 1 - offset] = tail[7 - offset]
        }
        return FeedbackRecord(
            timestamp: timestamp ?? 1_769_860_800 &+ UInt32(truncatingIfNeeded: index),
            token: try! DeviceToken(bytes: bytes))
    }

    /// `count` standard tuples numbered from `start`.
    static func records(_ count: Int, from start: Int = 1) -> [FeedbackRecord] {
        (start..<(start + count)).map { record($0) }
    }

    /// The wire bytes of `records`.
    static func encode(_ records: [FeedbackRecord]) -> [UInt8] {
        var writer = ByteWriter(capacity: records.count * 38)
        for record in records { record.encode(into: &writer) }
        return writer.bytes
    }

    /// A reader for `service` with the fixture client identity and CA.
    static func reader(
        _ service: FeedbackService, identity: ClientIdentity = TestGateway.clientIdentity,
        trust: [Certificate] = TestGateway.ca, configure: (inout FeedbackReader.Configuration) -> Void = { _ in }
    ) throws -> FeedbackReader {
        var configuration = FeedbackReader.Configuration(
            service: service, tls: TLSConfiguration(identity: identity, trust: .certificates(trust)))
        configuration.connectTimeout = 5
        configuration.idleTimeout = 10
        configure(&configuration)
        return try FeedbackReader(configuration: configuration)
    }
}

extension TestGateway {
    /// The simulator's feedback port as a ``FeedbackService``.
    var feedbackService: FeedbackService {
        .custom(host: endpoints.feedback!.host, port: endpoints.feedback!.port)
    }

    /// `--feedback HOST:PORT` for the CLI.
    var feedbackAddress: String { endpoints.feedback!.description }
}
