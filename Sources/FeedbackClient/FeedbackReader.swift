import APNsCore
import APNsCredentials
internal import APNsRuntime

/// Reads the feedback service: connects with the provider certificate, sends nothing, and
/// receives every tuple until the service closes the connection.
///
/// ```swift
/// let identity = try ClientIdentity(pkcs12: p12Bytes, passphrase: "secret")
/// let reader = try FeedbackReader(
///     configuration: .init(service: .sandbox, tls: TLSConfiguration(identity: identity)))
///
/// // All at once:
/// let result = await reader.read()
/// for record in result.records { print(record.token, record.timestamp) }
/// if let failure = result.failure { print("incomplete:", failure) }
///
/// // Or streaming, for long lists:
/// for try await record in reader.records() { handle(record) }
/// ```
///
/// Each read opens one connection, owned by an OS thread of its own (blocking socket work never
/// runs on Swift's cooperative pool). The service deletes what it has sent, so a read never
/// throws away tuples it received: a failed read still returns every complete tuple before the
/// failure (see ``FeedbackResult``). To keep evidence, pass a raw sink: it sees the exact bytes of
/// every complete tuple before the records are handed to you.
///
/// Server verification is the same as for sending: the service's chain and host name are checked
/// against ``TLSConfiguration/trust``.
public struct FeedbackReader: Sendable {
    /// Where and how to connect.
    public struct Configuration: Sendable {
        /// The service to read.
        public var service: FeedbackService
        /// The provider certificate and the trusted CAs (as for `PushClient` of LegacyAPNs).
        public var tls: TLSConfiguration
        /// Time to establish TCP and TLS.
        public var connectTimeout: Duration = .seconds(10)
        /// Time the service may send nothing before the read fails with
        /// ``LegacyAPNsError/Code-swift.struct/timedOut`` (its ``LegacyAPNsError/timeLimit`` is
        /// ``LegacyAPNsError/TimeLimit/idle``).
        public var idleTimeout: Duration = .seconds(30)
        /// Time from the end of the TLS handshake to the first byte or the close, or nil for only
        /// ``idleTimeout``.
        ///
        /// A feedback service sends its list (or closes, when it is empty) as soon as the
        /// handshake is done. A peer that sends nothing and keeps the connection open for this
        /// long is not speaking the feedback protocol (typically a gateway port, 2195, which
        /// waits for notifications): the read fails with
        /// ``LegacyAPNsError/Code-swift.struct/protocolRefused`` saying so (its
        /// ``LegacyAPNsError/timeLimit`` is ``LegacyAPNsError/TimeLimit/firstByte``), after seconds
        /// rather than the whole idle timeout. Retrying cannot help, so a ``FeedbackPoller`` stops.
        public var firstByteTimeout: Duration? = .seconds(5)
        /// The longest one read may take, from the connection attempt to the service's close, or
        /// nil for no limit.
        ///
        /// A service that trickles tuples (one a second, say) never trips ``idleTimeout``; this
        /// ends the read anyway. The read then fails with
        /// ``LegacyAPNsError/Code-swift.struct/timedOut`` (its ``LegacyAPNsError/timeLimit`` is
        /// ``LegacyAPNsError/TimeLimit/readDeadline``) and, as for every failure, the result
        /// still holds every complete tuple received before it.
        public var readDeadline: Duration? = .seconds(300)
        /// Records a ``FeedbackRecordStream`` buffers ahead of its consumer before the read pauses.
        public var streamBufferLimit: Int = 16_384

        /// Creates a configuration with the default timeouts.
        public init(service: FeedbackService, tls: TLSConfiguration) {
            self.service = service
            self.tls = tls
        }
    }

    /// Receives the raw bytes of complete tuples as they arrive (one batch a call), on the
    /// connection thread, before the records are handed out.
    ///
    /// Throwing does not stop the read (the service has already forgotten what it sent, so the
    /// records are still delivered); the sink is not called again, and the error becomes the
    /// result's failure unless the read itself failed.
    public typealias RawSink = @Sendable ([UInt8]) throws -> Void

    /// How this reader connects.
    public let configuration: Configuration
    private let context: TLSContext

    /// Creates a reader; nothing connects until ``read(rawSink:)`` or ``records(rawSink:)``.
    ///
    /// - Throws: ``LegacyAPNsError`` when the TLS context cannot be built (no usable identity or
    ///   trust store).
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        self.context = try TLSContext.client(configuration.tls)
    }

    var settings: FeedbackConnection.Settings {
        FeedbackConnection.Settings(
            endpoint: configuration.service.endpoint, context: context,
            connectTimeout: configuration.connectTimeout.inSeconds, idleTimeout: configuration.idleTimeout.inSeconds,
            firstByteTimeout: configuration.firstByteTimeout?.inSeconds,
            readDeadline: configuration.readDeadline?.inSeconds)
    }

    /// Connects, reads every tuple until the service closes, and returns them.
    ///
    /// Never throws: a failure (connection, TLS, a stream ending inside a tuple, the raw sink, task
    /// cancellation) is the result's ``FeedbackResult/failure``, next to the complete tuples
    /// received before it.
    public func read(rawSink: RawSink? = nil) async -> FeedbackResult {
        let stop = StopFlag()
        let settings = settings
        let start = Monotonic.now()
        return await withTaskCancellationHandler {
            await OSThread.run(name: "apns-feedback") {
                let connection = FeedbackConnection(settings: settings, stop: stop, rawSink: rawSink)
                var records: [FeedbackRecord] = []
                let outcome = connection.run { batch in
                    records.append(contentsOf: batch)
                    return true
                }
                return FeedbackResult(
                    records: records, failure: outcome.failure, byteCount: outcome.byteCount,
                    seconds: Monotonic.now() - start)
            }
        } onCancel: {
            stop.set()
        }
    }

    /// The tuples as an asynchronous sequence, streamed while they arrive: at most
    /// ``Configuration/streamBufferLimit`` records wait in memory, whatever the list's length.
    ///
    /// Each iteration opens a connection when it first asks for a record. After the last complete
    /// tuple the iteration throws the read's failure (a ``LegacyAPNsError``), if there was one,
    /// so a truncated stream yields every complete tuple and then throws. Breaking out of the loop
    /// or cancelling the task closes the connection.
    public func records(rawSink: RawSink? = nil) -> FeedbackRecordStream {
        FeedbackRecordStream(settings: settings, rawSink: rawSink, bufferLimit: configuration.streamBufferLimit)
    }
}
