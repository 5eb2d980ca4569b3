internal import APNsRuntime

/// Sends notifications through Apple's HTTP/2 provider API (or a local one), and accounts for
/// every one.
///
/// ```swift
/// let key = try SigningKey(pemRepresentation: p8Bytes)
/// var configuration = ProviderClient.Configuration(
///     server: .sandbox, credentials: .token(key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ"))
/// configuration.topic = "com.example.app"
/// let client = try ProviderClient(configuration: configuration)
/// let report = await client.send(requests)   // any Sequence or AsyncSequence of ProviderRequest
/// for rejection in report.rejected { print(rejection.status, rejection.reason ?? "") }
/// ```
///
/// The same `.p12` that served the binary gateway works: `.certificate(identity)`. Each connection
/// of the pool is owned by one thread that submits many requests per TLS record and reads the
/// answers in the same poll; a ``ProviderConnectionMachine`` per connection decides what to send,
/// retry or give up, so every notification ends accepted (a 200), rejected (status, reason, the
/// 410 timestamp), unconfirmed (sent, answer lost: a possible duplicate if sent again) or not sent,
/// and a request that a GOAWAY, a refused or reset stream, a lost connection, 429 or 5xx left
/// without a verdict goes out again on whichever connection is free.
public struct ProviderClient: Sendable {
    /// Everything about where and how to send.
    public struct Configuration: Sendable {
        /// Where to connect.
        public var server: ProviderServer
        /// Certificate or token authentication.
        public var credentials: ProviderCredentials
        /// Which CAs vouch for the server (the system store, or a local simulator's CA).
        public var trust: TLSConfiguration.Trust = .systemDefault
        /// The topic of requests that carry none (certificate auth: the certificate's topic by
        /// default; token auth needs one, here or in every request).
        public var topic: String?
        /// Parallel connections.
        public var connections = 1
        /// Stream limits, timeouts, retries and token rotation, per connection.
        public var delivery = ProviderConnectionMachine.Configuration()
        /// Time to establish TCP and TLS.
        public var connectTimeout: Duration = .seconds(10)
        /// Notifications read ahead of the connections (memory stays bounded by this).
        public var inputBuffer = 8192
        /// The clocks (inject one in tests to move through token lifetimes quickly).
        public var clock: any ProviderClock = SystemProviderClock()

        /// Creates a configuration with the documented defaults.
        public init(server: ProviderServer, credentials: ProviderCredentials) {
            self.server = server
            self.credentials = credentials
            self.topic = credentials.certificateTopic
        }
    }

    /// The configuration the client was created with.
    public let configuration: Configuration
    private let context: TLSContext
    private let events: (@Sendable (ProviderEvent) -> Void)?

    /// Creates a client; nothing connects until a send.
    ///
    /// - Parameter events: called for every ``ProviderEvent``, from the connection threads; keep
    ///   it quick.
    /// - Throws: ``LegacyAPNsError`` when the TLS context cannot be built.
    public init(configuration: Configuration, events: (@Sendable (ProviderEvent) -> Void)? = nil) throws {
        self.configuration = configuration
        let identity: ClientIdentity? =
            if case .certificate(let identity) = configuration.credentials { identity } else { nil }
        self.context = try TLSContext.client(
            TLSConfiguration(identity: identity, trust: configuration.trust), applicationProtocols: ["h2"])
        self.events = events
        var delivery = configuration.delivery
        delivery.usesTokens = configuration.credentials.usesTokens
        self.delivery = delivery
    }

    private let delivery: ProviderConnectionMachine.Configuration

    /// Sends one notification.
    public func send(_ request: ProviderRequest) async -> ProviderSendReport {
        await send([request])
    }

    /// Sends every notification of a sequence, iterated on a thread of its own as fast as the
    /// connections take them.
    public func send<Input: Sequence & Sendable>(_ requests: Input) async -> ProviderSendReport
    where Input.Element == ProviderRequest {
        await run { queue in
            await OSThread.run(name: "apns-h2-input") {
                for request in requests {
                    guard queue.pushWaiting(request) else { break }
                }
                queue.finish()
            }
            return nil
        }
    }

    /// Sends every notification of an asynchronous sequence, streaming. If the sequence throws,
    /// no more are taken, those taken are settled, and the error is the report's failure.
    /// Cancelling the task does the same.
    public func send<Input: AsyncSequence>(_ requests: Input) async -> ProviderSendReport
    where Input.Element == ProviderRequest {
        await run { queue in
            do {
                for try await request in requests {
                    guard await queue.push(request) else { return nil }
                }
            } catch let error as LegacyAPNsError {
                return error
            } catch {
                return LegacyAPNsError(.malformedInput, "\(error)")
            }
            return nil
        }
    }

    /// Checks a request as the send does before sending it: what APNs would refuse it for, or nil.
    public func problem(with request: ProviderRequest) -> (reason: ProviderReason, explanation: String)? {
        var request = request
        if request.topic == nil { request.topic = configuration.topic }
        if request.pushType == nil { request.pushType = .inferred(for: request.payload) }
        return request.problem(usesTokens: configuration.credentials.usesTokens)
    }

    private func run(_ feed: (ProviderWorkQueue) async -> LegacyAPNsError?) async -> ProviderSendReport {
        let clock = configuration.clock
        let start = clock.now()
        let queue = ProviderWorkQueue(capacity: configuration.inputBuffer)
        let slots = Swift.max(1, configuration.connections)
        let collected = ReportCollector(expected: slots)
        let settings = ProviderConnection.Settings(
            endpoint: configuration.server.endpoint, context: context, credentials: configuration.credentials,
            connectTimeout: configuration.connectTimeout.inSeconds, defaultTopic: configuration.topic, clock: clock)
        for slot in 0..<slots {
            let delivery = self.delivery
            let events = self.events
            OSThread.start(name: "apns-h2-\(slot)") {
                let connection = ProviderConnection(
                    slot: slot, settings: settings, delivery: delivery, queue: queue, events: events)
                collected.add(connection.run())
            }
        }
        let inputFailure = await withTaskCancellationHandler {
            let failure = await feed(queue)
            if let failure { queue.stop(failure) }
            queue.finish()
            return failure
        } onCancel: {
            queue.stop(LegacyAPNsError(.cancelled, "the send was cancelled"))
        }
        var report = await collected.result()
        // What no connection will send any more: lost retries may have been delivered; input that
        // was never taken certainly was not.
        let (retries, untaken) = queue.leftovers()
        let reason = report.failure?.reason ?? "the send stopped"
        for entry in retries {
            report.unconfirmed.append(
                ProviderUnconfirmed(
                    position: entry.position, request: entry.request, mayHaveBeenDelivered: entry.possiblyDelivered,
                    why: reason))
        }
        for entry in untaken {
            report.unconfirmed.append(
                ProviderUnconfirmed(
                    position: entry.position, request: entry.request, mayHaveBeenDelivered: false, why: reason))
        }
        report.sent = queue.taken
        if report.failure == nil {
            if let inputFailure {
                report.failure = inputFailure
            } else if Task.isCancelled {
                report.failure = LegacyAPNsError(.cancelled, "the send was cancelled")
            }
        }
        report.rejected.sort { $0.position < $1.position }
        report.unconfirmed.sort { $0.position < $1.position }
        report.seconds = (clock.now() - start).inSeconds
        return report
    }
}

/// Collects the per-connection reports and hands the merged one to the sender when all are in.
private final class ReportCollector: @unchecked Sendable {
    // @unchecked: `reports` is guarded by `lock`; `merged` is a Handoff (thread-safe).
    private let lock = ConditionLock()
    private let expected: Int
    private var reports: [ProviderSendReport] = []
    private let merged = Handoff<ProviderSendReport>()

    init(expected: Int) { self.expected = expected }

    func add(_ report: ProviderSendReport) {
        let all: [ProviderSendReport]? = lock.withLock {
            reports.append(report)
            return reports.count == expected ? reports : nil
        }
        guard let all else { return }
        var total = ProviderSendReport()
        for report in all { total.merge(report) }
        merged.put(total)
    }

    func result() async -> ProviderSendReport { await merged.take() }
}
