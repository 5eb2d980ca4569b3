internal import APNsRuntime

/// A long-running HTTP/2 send that takes notifications as they come: from any number of threads
/// or tasks, for as long as the producer runs (the bridge keeps one open for days).
///
/// ```swift
/// let stream = client.openStream()          // connections start now
/// let position = await stream.submit(request, tag: 42)
/// // ... the client's event handler sees .accepted / .rejected / .unconfirmed with tag 42 ...
/// let report = await stream.finish()        // every submitted notification has its verdict
/// ```
///
/// Every submitted notification gets exactly one verdict event (``ProviderEvent/accepted(connection:_:)``,
/// ``ProviderEvent/rejected(connection:_:)`` or ``ProviderEvent/unconfirmed(connection:_:)``)
/// carrying the `tag` it was submitted with, so a producer routes verdicts back to their source
/// without a lookup of its own. A stream stops for good when its credentials cannot succeed, when
/// the server stays unreachable past the retry budget, or on ``stop(_:)``: from then on
/// ``submit(_:tag:)`` returns nil, and what was waiting gets its `unconfirmed` event (connection
/// -1) as soon as the last connection has finished. Open a new stream to go on.
public final class ProviderStream: Sendable {
    private let queue: ProviderWorkQueue
    private let final = Handoff<ProviderSendReport>()
    private let collector: ReportCollector
    private let events: (@Sendable (ProviderEvent) -> Void)?
    private let keepsVerdictLists: Bool

    init(
        client configuration: ProviderClient.Configuration, context: TLSContext,
        delivery: ProviderConnectionMachine.Configuration, events: (@Sendable (ProviderEvent) -> Void)?,
        pool: ProviderConnectionPool? = nil
    ) {
        let clock = configuration.clock
        let start = clock.now()
        let queue = ProviderWorkQueue(capacity: configuration.inputBuffer)
        let slots = Swift.max(1, configuration.connections)
        let final = self.final
        self.queue = queue
        self.events = events
        self.keepsVerdictLists = delivery.keepsVerdictLists
        self.collector = ReportCollector(expected: slots) { merged in
            // Every connection has finished: what none will send any more gets its verdict.
            var report = merged
            Self.settleLeftovers(of: queue, in: &report, keepsLists: delivery.keepsVerdictLists, events: events)
            if report.failure == nil, let stopped = queue.stopReason { report.failure = stopped }
            report.seconds = (clock.now() - start).inSeconds
            final.put(report)
        }
        let settings = ProviderConnection.Settings(
            endpoint: configuration.server.endpoint, credentials: configuration.credentials,
            connectTimeout: configuration.connectTimeout.inSeconds, defaultTopic: configuration.topic, clock: clock)
        let dialer = TLSTransportDialer(
            endpoint: configuration.server.endpoint, context: context, proxy: configuration.proxy?.tunnel,
            applicationProtocol: "h2")
        let collector = self.collector
        for slot in 0..<slots {
            OSThread.start(name: "apns-h2-\(slot)") {
                // A connection an earlier send of the client kept open, else a new one.
                let connection: ProviderConnection
                if let kept = pool?.take() {
                    kept.reuse(slot: slot, delivery: delivery, queue: queue, events: events)
                    connection = kept
                } else {
                    connection = ProviderConnection(
                        slot: slot, settings: settings, dialer: dialer, delivery: delivery, queue: queue,
                        events: events, keepsConnection: pool != nil)
                }
                let report = connection.run()
                // Kept before the report goes in, so the caller's next send finds it.
                if connection.isKept, pool?.keep(connection) != true { connection.discard() }
                collector.add(report)
            }
        }
    }

    /// Submits a notification, suspending (never blocking) while the stream's input buffer is
    /// full. Returns its position (1, 2, 3, ... in submission order), or nil when the stream has
    /// stopped (the notification was not taken; see ``failure``).
    @discardableResult
    public func submit(_ request: ProviderRequest, tag: UInt64 = 0) async -> UInt64? {
        await queue.push(request, tag: tag)
    }

    /// Submits from an OS thread of the caller's (a socket loop), blocking it while the input
    /// buffer is full. Returns the position, or nil when the stream has stopped.
    @discardableResult
    public func submitBlocking(_ request: ProviderRequest, tag: UInt64 = 0) -> UInt64? {
        queue.pushWaiting(request, tag: tag)
    }

    /// Submits requests with their tags from an OS thread in one go (one lock for the lot, where
    /// ``submitBlocking(_:tag:)`` takes one per request), blocking it while the input buffer is
    /// full. Returns the first one's position (the rest follow in order), or nil when the stream
    /// has stopped: then none of them was taken.
    @discardableResult
    public func submitBlocking(contentsOf requests: [(request: ProviderRequest, tag: UInt64)]) -> UInt64? {
        queue.pushWaiting(contentsOf: requests, evenIfStopped: false)
    }

    /// For a producer that took `requests` from its caller's input for good: after a stop they are
    /// numbered anyway and reported as not sent (``finish()``). False when the stream has stopped.
    func submitTaken(_ requests: [(request: ProviderRequest, tag: UInt64)]) -> Bool {
        queue.pushWaiting(contentsOf: requests, evenIfStopped: true) != nil
    }

    /// No more requests will be submitted (``finish()`` says it too); from any thread.
    func endInput() { queue.finish() }

    /// Notifications taken by a connection (sent, or about to be, or waiting to be retried) and
    /// without a final verdict yet: what a stopped stream is settling.
    public var notificationsInFlight: Int { queue.unsettled }

    /// How many notifications wait for a connection and how many the connections hold, at one moment.
    public struct Occupancy: Hashable, Sendable {
        /// Submitted (or waiting to be retried) and not taken by a connection yet: the queue depth.
        public var queued = 0
        /// Taken by a connection (sent, or about to be) and without a verdict yet.
        public var inFlight = 0

        /// Creates a value.
        public init(queued: Int = 0, inFlight: Int = 0) {
            self.queued = queued
            self.inFlight = inFlight
        }
    }

    /// The stream's occupancy now (for metrics: one lock on the queue).
    public var occupancy: Occupancy { queue.occupancy }

    /// Why the stream stopped (nil while it takes notifications).
    public var failure: LegacyAPNsError? { queue.stopReason }

    /// Stops taking notifications; those in flight still get their answers, the rest their
    /// `unconfirmed` verdicts.
    public func stop(_ reason: LegacyAPNsError) {
        queue.stop(reason)
    }

    /// Stops at once: as ``stop(_:)``, and what is in flight is given up as well (its connections
    /// close within about a second; those notifications get `unconfirmed` verdicts that say they
    /// may have been delivered). For a shutdown that must not wait for a slow server.
    public func abandon(_ reason: LegacyAPNsError) {
        queue.abandon(reason)
    }

    /// No more notifications: waits until every submitted one has its verdict and returns the
    /// report. Call it once.
    public func finish() async -> ProviderSendReport {
        queue.finish()
        var report = await final.take()
        // Handed over by a producer after the last connection had ended (a batch of a sequence
        // whose send stopped meanwhile): not sent, and named as such rather than forgotten.
        Self.settleLeftovers(of: queue, in: &report, keepsLists: keepsVerdictLists, events: events)
        return report
    }

    /// Gives what no connection will send any more (retries still waiting, input never taken)
    /// its `unconfirmed` verdict, with an event (connection -1), and counts what was submitted.
    static func settleLeftovers(
        of queue: ProviderWorkQueue, in report: inout ProviderSendReport, keepsLists: Bool,
        events: (@Sendable (ProviderEvent) -> Void)?
    ) {
        let (retries, untaken) = queue.leftovers()
        report.sent = queue.pushed
        guard !retries.isEmpty || !untaken.isEmpty else { return }
        let reason = report.failure?.reason ?? queue.stopReason?.reason ?? "the send stopped"
        for (entry, mayHaveBeenDelivered) in retries.map({ ($0, $0.possiblyDelivered) }) + untaken.map({ ($0, false) })
        {
            let unconfirmed = ProviderUnconfirmed(
                position: entry.position, request: entry.request, mayHaveBeenDelivered: mayHaveBeenDelivered,
                why: reason, tag: entry.tag)
            if keepsLists { report.unconfirmed.append(unconfirmed) } else { report.unlistedUnconfirmed += 1 }
            events?(.unconfirmed(connection: -1, unconfirmed))
        }
        report.rejected.sort { $0.position < $1.position }
        report.unconfirmed.sort { $0.position < $1.position }
    }

    /// Waits until the stream has ended on its own (stopped, or finished elsewhere) and returns the
    /// report, without finishing it. Call it at most once, instead of ``finish()``.
    public func ended() async -> ProviderSendReport {
        await final.take()
    }
}

/// Collects the per-connection reports and runs `completion` with the merged one when all are in
/// (on the thread of the last connection to finish).
final class ReportCollector: @unchecked Sendable {
    // @unchecked: `reports` is guarded by `lock`; `completion` is immutable.
    private let lock = ConditionLock()
    private let expected: Int
    private var reports: [ProviderSendReport] = []
    private let completion: @Sendable (ProviderSendReport) -> Void

    init(expected: Int, completion: @escaping @Sendable (ProviderSendReport) -> Void) {
        self.expected = expected
        self.completion = completion
    }

    func add(_ report: ProviderSendReport) {
        let all: [ProviderSendReport]? = lock.withLock {
            reports.append(report)
            return reports.count == expected ? reports : nil
        }
        guard let all else { return }
        var total = ProviderSendReport()
        for report in all { total.merge(report) }
        completion(total)
    }
}
