import APNsCore
import APNsCredentials
internal import APNsRuntime

/// Sends notifications over the legacy binary interface, and accounts for every one.
///
/// ```swift
/// let identity = try ClientIdentity(pkcs12: p12Bytes, passphrase: "secret")
/// var configuration = PushClient.Configuration(
///     gateway: .custom(host: "127.0.0.1", port: 2195),
///     tls: TLSConfiguration(identity: identity, trust: try .pem(caBytes)))
/// configuration.connections = 2
/// let client = try PushClient(configuration: configuration)
/// let report = await client.send(notifications)   // any Sequence or AsyncSequence
/// print(report.accepted, report.rejected, report.unconfirmed)
/// ```
///
/// Each connection is owned by one thread that writes large batches and reads the gateway's
/// error responses without stalling writes. Resend decisions are made by a
/// ``DeliveryStateMachine`` per connection: nothing the gateway may have dropped is lost, nothing
/// is resent silently, and a notification counts as accepted only when the gateway has confirmed
/// it (see ``DeliveryStateMachine`` for the confirmation barrier).
public struct PushClient: Sendable {
    /// Everything about where and how to send.
    public struct Configuration: Sendable {
        /// Where to connect.
        public var gateway: Gateway
        /// The client certificate and the server's trust.
        public var tls: TLSConfiguration
        /// Frame format; the default is the enhanced format (command 1).
        public var format: FrameFormat = .enhanced
        /// Payload limit in bytes: 2048, or 256 for gateways older than iOS 8.
        public var maximumPayloadSize: Int = Payload.defaultMaximumSize
        /// Parallel connections (each with its own thread and cache).
        public var connections: Int = 1
        /// Cache size, retry limit and reconnect policy, per connection.
        public var delivery = DeliveryStateMachine.Configuration()
        /// Time to establish TCP and TLS.
        public var connectTimeout: Duration = .seconds(10)
        /// Time to wait for the answer to the confirmation barrier.
        public var verdictTimeout: Duration = .seconds(10)
        /// When the input pauses this long with notifications in flight, confirm them (one
        /// barrier, then a new connection when more arrive) rather than leave them unconfirmed.
        /// Shorter confirms sooner; longer reconnects less often for trickling input.
        public var idleConfirmationDelay: Duration = .seconds(1)
        /// Bytes per TLS write (at most one TLS record's 16 KiB is useful).
        public var writeBatchSize: Int = 16 * 1024
        /// Time a gateway may accept no data before the connection counts as dead.
        public var stallTimeout: Duration = .seconds(30)

        /// Creates a configuration with the documented defaults for everything else.
        public init(gateway: Gateway, tls: TLSConfiguration) {
            self.gateway = gateway
            self.tls = tls
        }
    }

    /// The configuration the client was created with.
    public let configuration: Configuration
    private let context: TLSContext
    private let events: (@Sendable (PushEvent) -> Void)?
    /// The sends in progress, for ``abandon()`` and ``notificationsInFlight``.
    private let running = ActiveSet<RunningSend>()

    /// Creates a client; nothing connects until `send(_:)`.
    ///
    /// - Parameter configuration: where to send, the TLS identity and trust, and the limits.
    ///
    /// - Parameter events: called for every ``PushEvent`` from the connection threads; keep it
    ///   quick.
    /// - Throws: ``LegacyAPNsError`` when the TLS context cannot be built (no usable identity or
    ///   trust store).
    public init(configuration: Configuration, events: (@Sendable (PushEvent) -> Void)? = nil) throws {
        self.configuration = configuration
        self.context = try TLSContext.client(configuration.tls)
        self.events = events
    }

    /// Ends every send of this client in progress at once, without waiting for verdicts: what
    /// is in flight is reported unconfirmed (its fate is unknown), and what waits to be resent or
    /// was never written is reported not sent. Each send returns its report within about 50 ms
    /// (longer only while a connection attempt is under way, at most
    /// ``Configuration/connectTimeout``). Its ``SendReport/failure`` is ``LegacyAPNsError/Code/cancelled``.
    ///
    /// Cancelling a send's task is the gentle stop: nothing more is taken or resent, and what is in
    /// flight gets its verdict (one confirmation barrier, at most ``Configuration/verdictTimeout``).
    /// A command line calls this on the second Ctrl-C.
    public func abandon() {
        for send in running.all {
            send.stopInput()
            send.control.abandon()
        }
    }

    /// Notifications written to a gateway by this client's sends in progress and without a
    /// verdict yet (as the connection threads last published it): what a cancelled send is
    /// settling.
    public var notificationsInFlight: Int { running.all.reduce(0) { $0 + $1.control.inFlight } }

    /// Sends one notification.
    public func send(_ notification: PushNotification) async -> SendReport {
        await send([notification])
    }

    /// Sends every notification of a sequence.
    ///
    /// The sequence is iterated on a thread of its own, so a sequence that reads files or
    /// computes its elements never blocks Swift's cooperative pool; it is read only as fast as the
    /// gateway takes notifications.
    public func send<Input: Sequence & Sendable>(_ notifications: Input) async -> SendReport
    where Input.Element == PushNotification {
        await run { source in
            await OSThread.run(name: "apns-input") {
                var iterator = notifications.makeIterator()
                var batch: [PushNotification] = []
                batch.reserveCapacity(Self.batchSize)
                while let notification = iterator.next() {
                    batch.append(notification)
                    if batch.count == Self.batchSize {
                        guard source.pushWaiting(batch) else { return nil }
                        batch.removeAll(keepingCapacity: true)
                    }
                }
                if !batch.isEmpty { _ = source.pushWaiting(batch) }
                // Said here, on the producer's thread: the end of the input must not wait for a
                // cooperative thread to be free (a barrier would confirm a pause that is none).
                source.finish()
                return nil
            }
        }
    }

    /// Notifications handed to the connection threads at a time from a synchronous sequence.
    static let batchSize = NotificationSource.batchSize

    /// Sends every notification of an asynchronous sequence, streaming: the sequence is read only
    /// as fast as the gateway takes notifications, so memory stays bounded.
    ///
    /// If the sequence throws, no more notifications are taken, the ones taken are confirmed, and
    /// the error is the report's ``SendReport/failure``. Cancelling the task does the same.
    public func send<Input: AsyncSequence>(_ notifications: Input) async -> SendReport
    where Input.Element == PushNotification {
        await run { source in
            do {
                for try await notification in notifications {
                    guard await source.push(notification) else { return nil }
                }
            } catch let error as LegacyAPNsError {
                return error
            } catch {
                return LegacyAPNsError(.malformedInput, "\(error)")
            }
            return nil
        }
    }

    /// Sends every notification of a sequence of pre-encoded ``FrameBatch``es: the same send as
    /// ``send(_:)-7u9fj`` (the same rules, events and report for the same notifications),
    /// without encoding anything or keeping a ``PushNotification`` per notification in flight.
    ///
    /// The batches are iterated on a thread of its own, only as fast as the gateway takes their
    /// notifications. Every batch must be of the client's ``Configuration/format``; a batch of
    /// another format stops the send before its first notification, and the report's
    /// ``SendReport/failure`` says so.
    public func send<Input: Sequence & Sendable>(frames batches: Input) async -> SendReport
    where Input.Element == FrameBatch {
        let format = configuration.format
        return await run(
            source: FrameSource(capacity: 8192),
            feed: { source in
                await OSThread.run(name: "apns-input") {
                    var failure: LegacyAPNsError?
                    for batch in batches {
                        guard batch.format == format else {
                            failure = LegacyAPNsError(
                                .malformedInput,
                                "a frame batch of format \(batch.format) was given to a client sending \(format)")
                            break
                        }
                        guard source.pushWaiting(batch) else { break }
                    }
                    // Said here, on the producer's thread (see send(_:)).
                    source.finish()
                    return failure
                }
            })
    }

    /// Starts the connection threads, runs `feed` to fill the shared input (it returns an error
    /// if the input failed), and collects the verdicts.
    private func run(_ feed: @escaping (NotificationSource) async -> LegacyAPNsError?) async -> SendReport {
        await run(
            source: NotificationSource(capacity: 8192), feed: feed)
    }

    /// Starts a thread per connection slot (a ``GatewayConnection`` over `source`), runs `feed`
    /// to fill `source`, and collects the verdicts.
    private func run<Source: SlotSource>(source: Source, feed: (Source) async -> LegacyAPNsError?) async -> SendReport {
        let start = Monotonic.now()
        let collector = ReportCollector(expected: Swift.max(1, configuration.connections))
        let settings = GatewayConnectionSettings(
            format: configuration.format, encoder: FrameEncoder(maximumPayloadSize: configuration.maximumPayloadSize),
            verdictTimeout: configuration.verdictTimeout.inSeconds,
            idleConfirmationDelay: configuration.idleConfirmationDelay.inSeconds,
            writeBatchSize: configuration.writeBatchSize, stallTimeout: configuration.stallTimeout.inSeconds)
        let endpoint = configuration.gateway.endpoint
        let connectTimeout = configuration.connectTimeout.inSeconds
        let context = self.context
        let slots = Swift.max(1, configuration.connections)
        let control = SendControl(slots: slots)
        let registration = running.add(RunningSend(control: control, stopInput: { source.stop() }))
        defer { running.remove(registration) }
        for index in 0..<slots {
            let delivery = configuration.delivery
            let events = self.events
            OSThread.start(name: "apns-\(index)") {
                let dialer = TLSDialer(endpoint: endpoint, context: context, timeout: connectTimeout)
                collector.add(
                    GatewayConnection<Source.Input.Machine, Source.Input>(
                        slot: index, settings: settings, delivery: delivery, source: source, dialer: dialer,
                        events: events, control: control
                    ).run())
            }
        }

        // The handler covers the wait for the verdicts too: the input may be all handed over long
        // before they are in.
        var (inputFailure, report) = await withTaskCancellationHandler {
            let failure = await feed(source)
            if failure != nil {
                source.stop()
                control.settle()
            }
            source.finish()
            return (failure, await collector.result())
        } onCancel: {
            source.stop()
            control.settle()
        }

        for (position, notification) in source.untaken() {
            report.sent += 1
            report.unconfirmed.append(
                UnconfirmedNotification(position: position, notification: notification, wasWritten: false))
        }
        if report.failure == nil {
            if let inputFailure {
                report.failure = inputFailure
            } else if Task.isCancelled {
                report.failure = LegacyAPNsError(.cancelled, "the send was cancelled")
            }
        }
        report.rejected.sort { $0.position < $1.position }
        report.unconfirmed.sort { $0.position < $1.position }
        report.seconds = Monotonic.now() - start
        return report
    }
}

/// The shared input of a send's connection slots, as ``PushClient`` drives it.
package protocol SlotSource: AnyObject, Sendable {
    /// What one connection slot takes from it with.
    associatedtype Input: SlotInput where Input.Source == Self
    /// The producer has no more input.
    func finish()
    /// No more input will be taken.
    func stop()
    /// What was given and never taken, with the positions it would have had.
    func untaken() -> [(UInt64, PushNotification)]
}

extension NotificationSource: SlotSource {
    package typealias Input = NotificationInput
}

extension FrameSource: SlotSource {
    package typealias Input = FrameInput
}

/// A send in progress, as ``PushClient/abandon()`` reaches it.
private struct RunningSend: Sendable {
    let control: SendControl
    /// Makes the send's input take nothing more.
    let stopInput: @Sendable () -> Void
}

/// Collects the per-connection reports and hands the merged one to the sender when all are in.
private final class ReportCollector: @unchecked Sendable {
    // @unchecked: `reports` is guarded by `lock`; `merged` is a Handoff (thread-safe).
    private let lock = ConditionLock()
    private let expected: Int
    private var reports: [SendReport] = []
    private let merged = Handoff<SendReport>()

    init(expected: Int) { self.expected = expected }

    /// Called by each connection thread with its slot's report.
    func add(_ report: SendReport) {
        let all: [SendReport]? = lock.withLock {
            reports.append(report)
            return reports.count == expected ? reports : nil
        }
        guard let all else { return }
        var total = SendReport()
        for report in all { total.merge(report) }
        merged.put(total)
    }

    /// The merged report, once every slot has reported.
    func result() async -> SendReport { await merged.take() }
}
