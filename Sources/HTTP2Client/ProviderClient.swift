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
/// let next = await client.send(moreRequests)  // the same connection, the same provider token
/// await client.shutdown()                      // closes the connections
/// ```
///
/// **Lifetime.** Create one client and keep it: its connections stay open from one send to the
/// next (up to ``Configuration/connections`` of them), each with its provider token until the
/// token's refresh time, so five sends cost one TLS handshake and one token signature. Apple treats
/// rapid connecting and disconnecting as a denial-of-service attack. A connection the server closed
/// or sent GOAWAY on meanwhile is replaced by a new one when the next send starts; a send whose
/// connection breaks retries on another, as always. ``shutdown()`` closes the connections (call
/// it when done, before the program exits); when the last copy of a client that was not shut down
/// goes away, its connections are closed then. ``openStream()`` opens connections of its own.
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
        /// An HTTP proxy to reach the server through (`CONNECT`), or nil to connect directly.
        public var proxy: ProviderProxy?
        /// Time to establish TCP and TLS (through the proxy, when there is one).
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
    /// The sends in progress, for ``abandon()``.
    private let running = ActiveSet<ProviderStream>()
    /// The connections kept open between sends (shared by every copy of this client).
    private let pool: ProviderConnectionPool

    /// Creates a client; nothing connects until a send, and the connections stay open after it
    /// until ``shutdown()``.
    ///
    /// - Parameters:
    ///   - configuration: the server, credentials, trust, connections and delivery policy.
    ///   - events: called for every ``ProviderEvent``, from the connection threads; keep it quick.
    /// - Throws: ``LegacyAPNsError`` when the TLS context cannot be built.
    public init(configuration: Configuration, events: (@Sendable (ProviderEvent) -> Void)? = nil) throws {
        self.configuration = configuration
        let identity: ClientIdentity? =
            if case .certificate(let identity) = configuration.credentials { identity } else { nil }
        self.context = try TLSContext.client(
            TLSConfiguration(identity: identity, trust: configuration.trust), applicationProtocols: ["h2"])
        self.events = events
        self.pool = ProviderConnectionPool(capacity: configuration.connections)
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
    ///
    /// The requests are handed to the connections ``batchSize`` at a time, so a sequence that
    /// produces slowly (one that waits on a pipe, say) is better sent as an `AsyncSequence`, whose
    /// elements go out one by one as they come.
    public func send<Input: Sequence & Sendable>(_ requests: Input) async -> ProviderSendReport
    where Input.Element == ProviderRequest {
        await run { stream in
            await OSThread.run(name: "apns-h2-input") {
                var batch: [(request: ProviderRequest, tag: UInt64)] = []
                batch.reserveCapacity(Self.batchSize)
                for request in requests {
                    batch.append((request, 0))
                    guard batch.count == Self.batchSize else { continue }
                    guard stream.submitTaken(batch) else { return }
                    batch.removeAll(keepingCapacity: true)
                }
                if !batch.isEmpty { _ = stream.submitTaken(batch) }
                // Said here, on the producer's thread: the end of the input must not wait for a
                // cooperative thread to be free (the connections would idle meanwhile, and a server
                // closing idle connections would make them reconnect for nothing).
                stream.endInput()
            }
            return nil
        }
    }

    /// Requests a synchronous sequence hands over at a time (one lock for the lot).
    public static let batchSize = 64

    /// Sends every notification of an asynchronous sequence, streaming. If the sequence throws,
    /// no more are taken, those taken are settled, and the error is the report's failure.
    /// Cancelling the task does the same.
    public func send<Input: AsyncSequence>(_ requests: Input) async -> ProviderSendReport
    where Input.Element == ProviderRequest {
        await run { stream in
            do {
                for try await request in requests {
                    guard await stream.submit(request) != nil else { return nil }
                }
            } catch let error as LegacyAPNsError {
                return error
            } catch {
                return LegacyAPNsError(.malformedInput, "\(error)")
            }
            return nil
        }
    }

    /// Closes the connections kept open between sends (each says GOAWAY and closes its TLS
    /// session). A send after this still works, on connections of its own that it closes when it
    /// ends. A send still running keeps its connections until it ends, then closes them.
    public func shutdown() async {
        let pool = self.pool
        await OSThread.run(name: "apns-h2-shutdown") { pool.shutDown() }
    }

    /// Checks a request as the send does before sending it: what APNs would refuse it for, or nil.
    public func problem(with request: ProviderRequest) -> (reason: ProviderReason, explanation: String)? {
        var request = request
        if request.topic == nil { request.topic = configuration.topic }
        if request.pushType == nil { request.pushType = .inferred(for: request.payload) }
        return request.problem(usesTokens: configuration.credentials.usesTokens)
    }

    /// Opens a long-running send: connections start now, and notifications are submitted as they
    /// come (see ``ProviderStream``). The client's event handler gets every verdict. The stream's
    /// connections are its own (not those the sends keep), and close when it finishes.
    public func openStream() -> ProviderStream {
        ProviderStream(client: configuration, context: context, delivery: delivery, events: events)
    }

    /// Ends every `send` of this client in progress at once (see ``ProviderStream/abandon(_:)``):
    /// nothing more is taken, what is in flight is given up (reported unconfirmed, possibly
    /// delivered) and what was never sent is reported not sent. Each send's report follows within
    /// about a second; its failure is ``LegacyAPNsError/Code/cancelled``. Cancelling a send's task is
    /// the gentle stop: what is in flight still gets its answer. A command line calls this on the
    /// second Ctrl-C.
    public func abandon() {
        for stream in running.all { stream.abandon(LegacyAPNsError(.cancelled, "the send was abandoned")) }
    }

    /// Notifications of this client's sends in progress taken by a connection and without a final
    /// verdict yet: what a cancelled send is settling.
    public var notificationsInFlight: Int { running.all.reduce(0) { $0 + $1.notificationsInFlight } }

    private func run(_ feed: (ProviderStream) async -> LegacyAPNsError?) async -> ProviderSendReport {
        let stream = ProviderStream(
            client: configuration, context: context, delivery: delivery, events: events, pool: pool)
        let registration = running.add(stream)
        defer { running.remove(registration) }
        // An input failure or a cancellation stops the stream; the report names the first reason
        // the send stopped (a connection's, or this one). The handler covers the wait for the
        // verdicts too: the input may be all handed over long before they are in.
        return await withTaskCancellationHandler {
            if let failure = await feed(stream) { stream.stop(failure) }
            return await stream.finish()
        } onCancel: {
            stream.stop(LegacyAPNsError(.cancelled, "the send was cancelled"))
        }
    }
}
