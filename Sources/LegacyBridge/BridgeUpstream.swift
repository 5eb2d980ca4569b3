import APNsCore
internal import APNsRuntime
import HTTP2Client
import Synchronization

/// The bridge's side of the HTTP/2 API: one ``ProviderClient`` and its current long-running
/// ``ProviderStream``, shared by every sender connection.
///
/// A stream stops for good when the upstream stays unreachable past the client's retry budget or
/// refuses the credentials; its notifications then get `unconfirmed` verdicts (which their senders
/// hear as status 10 naming the last one delivered, or as a close without a word when none was).
/// From then on the upstream is *out* (``readiness(timeout:)``): the bridge serves no new sender, since
/// nothing it sent could be delivered; after a pause that doubles up to 30 s the next sender to
/// arrive starts a fresh stream and waits for its connection, and from then on senders are served
/// again, so the bridge recovers when the upstream does, without a restart. The outage is reported
/// once (``BridgeEvent/upstreamUnavailable(reason:)``), and its end once an answer arrives
/// (``BridgeEvent/upstreamAvailable(refusedSenders:)``), not per connection.
final class BridgeUpstream: @unchecked Sendable {
    // @unchecked: `stream`, `finishing`, `failures`, `nextAttempt`, `lastFailure`, `users`,
    // `retired` and `refusedDuringOutage` are guarded by `lock`; `outageReported` is atomic; the rest is immutable.
    private let lock = ConditionLock()
    private let client: ProviderClient
    private var stream: ProviderStream?
    /// Streams being finished (``finish()``), each with the one task that finishes it: a retired
    /// pool's (``retire()``) and the stop's may overlap, and ``abandon(_:)`` must reach them all.
    private var finishing: [(stream: ProviderStream, done: Task<Void, Never>)] = []
    private var failures = 0
    private var nextAttempt: Double = 0
    private var lastFailure: LegacyAPNsError?
    private let pause = Backoff(initialDelay: .milliseconds(500), multiplier: 2, maximumDelay: .seconds(30))
    /// Senders refused since the outage was reported.
    private var refusedDuringOutage = 0
    /// Whether a connection to the upstream was made since the last stream stopped.
    private var connectedOnce = false
    /// The last failed connection attempt since the last connection, if any.
    private var connectFailure: LegacyAPNsError?
    /// Whether an outage was reported and no answer has come since (read per verdict, unlocked).
    private let outageReported = Atomic<Bool>(false)
    /// Called (outside the lock) when an outage begins and when it ends.
    private let report: @Sendable (BridgeEvent) -> Void
    /// Sender sessions served through this pool now (``attach()``, ``detach()``).
    private var users = 0
    /// Whether a reload retired it: no route uses it, it closes when its last session has left.
    private var retired = false

    init(client: ProviderClient, report: @escaping @Sendable (BridgeEvent) -> Void) {
        self.client = client
        self.report = report
    }

    /// Why no new sender may be served now, or nil; counts the sender as refused when it returns
    /// an error. Called before a sender's TLS handshake, so a refused sender has sent nothing.
    ///
    /// A sender is served once the current stream has made a connection to the upstream (since
    /// the last stream stopped). While a connection attempt is under way (the bridge's first, or
    /// the first after an outage's pause, which the next sender to arrive starts) the call waits
    /// for its outcome, up to `timeout` seconds; after a failed attempt, or during the pause, it
    /// refuses at once. A readiness probe passes `countsRefusal` false: it is not a sender.
    func readiness(timeout: Double, countsRefusal: Bool = true) -> LegacyAPNsError? {
        let deadline = Monotonic.now() + timeout
        var began: LegacyAPNsError?
        let failure: LegacyAPNsError? = lock.withLock {
            began = noteStoppedStream()
            while true {
                if connectedOnce, failures == 0 { return nil }
                if stream == nil {
                    if failures > 0, Monotonic.now() < nextAttempt { break }
                    stream = client.openStream()
                    connectFailure = nil
                }
                if connectFailure != nil { break }
                let remaining = deadline - Monotonic.now()
                if remaining <= 0 {
                    connectFailure = LegacyAPNsError(
                        .timedOut, "no connection to the upstream within \(formatSeconds(timeout))")
                    break
                }
                _ = lock.wait(timeout: Swift.min(remaining, 0.05))
                if let stopped = noteStoppedStream() { began = stopped }
            }
            if countsRefusal { refusedDuringOutage += 1 }
            return connectFailure ?? lastFailure ?? LegacyAPNsError(.connectionFailed, "the upstream is unavailable")
        }
        if let reason = began ?? failure { reportOutage(reason) }
        return failure
    }

    /// An upstream connection is up: senders are served (again).
    func noteConnected() {
        lock.withLock {
            connectedOnce = true
            connectFailure = nil
            failures = 0
            lock.broadcast()
        }
    }

    /// An upstream connection attempt failed (the stream retries). Before the stream's first
    /// connection no new sender is served until one succeeds; afterwards one connection's trouble
    /// refuses nobody (only a stream that stops for good does).
    func noteConnectFailed(_ reason: String) {
        lock.withLock {
            guard !connectedOnce else { return }
            connectFailure = LegacyAPNsError(.connectionFailed, "the upstream: \(reason)")
            lock.broadcast()
        }
    }

    /// Under `lock`: if the current stream has stopped, forgets it and starts the pause; returns
    /// the failure when this begins an outage that was not reported yet.
    private func noteStoppedStream() -> LegacyAPNsError? {
        guard let current = stream, let failure = current.failure else { return nil }
        lastFailure = failure
        stream = nil
        connectedOnce = false
        failures += 1
        // Credentials refused for good are refused again by a fresh connection: the longest pause
        // at once (each attempt costs the notifications of the one sender let in to find out).
        let delay = failure.code == .certificateRejected ? pause.maximumDelay : pause.delay(afterFailures: failures)
        nextAttempt = Monotonic.now() + delay.inSeconds
        return outageReported.load(ordering: .relaxed) ? nil : failure
    }

    private func reportOutage(_ failure: LegacyAPNsError) {
        guard outageReported.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else {
            return
        }
        report(.upstreamUnavailable(reason: failure.reason))
    }

    /// An answer came from upstream (a verdict that is not the upstream's failure): an outage
    /// reported is over. One relaxed load per verdict otherwise.
    func noteAnswer() {
        guard outageReported.load(ordering: .relaxed) else { return }
        guard outageReported.compareExchange(expected: true, desired: false, ordering: .relaxed).exchanged else {
            return
        }
        let refused = lock.withLock {
            defer { refusedDuringOutage = 0 }
            return refusedDuringOutage
        }
        report(.upstreamAvailable(refusedSenders: refused))
    }

    /// Sends `request` upstream with `tag` (blocking the caller's thread while the stream's input
    /// buffer is full). Returns nil when it was taken (its verdict comes as an event), or why not.
    func submit(_ request: ProviderRequest, tag: UInt64) -> LegacyAPNsError? {
        for _ in 0..<2 {
            guard let current = currentStream() else {
                return lock.withLock { lastFailure }
                    ?? LegacyAPNsError(.connectionFailed, "the upstream is unavailable")
            }
            if current.submitBlocking(request, tag: tag) != nil { return nil }
            // The stream stopped meanwhile: note why, and try a fresh one once.
            streamStopped(current)
        }
        return lock.withLock { lastFailure } ?? LegacyAPNsError(.connectionFailed, "the upstream is unavailable")
    }

    /// Sends `requests` upstream with their tags in one go, in order (one lock on the stream for
    /// the lot). Returns nil when all were taken (their verdicts come as events), or why none was.
    func submit(contentsOf requests: [(request: ProviderRequest, tag: UInt64)]) -> LegacyAPNsError? {
        for _ in 0..<2 {
            guard let current = currentStream() else {
                return lock.withLock { lastFailure }
                    ?? LegacyAPNsError(.connectionFailed, "the upstream is unavailable")
            }
            if current.submitBlocking(contentsOf: requests) != nil { return nil }
            streamStopped(current)
        }
        return lock.withLock { lastFailure } ?? LegacyAPNsError(.connectionFailed, "the upstream is unavailable")
    }

    /// The stream to use, opening one when there is none (or the last one stopped) and the pause
    /// after failures is over.
    private func currentStream() -> ProviderStream? {
        let (current, began) = lock.withLock { () -> (ProviderStream?, LegacyAPNsError?) in
            if let stream, stream.failure == nil { return (stream, nil) }
            let began = noteStoppedStream()
            guard Monotonic.now() >= nextAttempt else { return (nil, began) }
            let fresh = client.openStream()
            stream = fresh
            return (fresh, began)
        }
        if let began { reportOutage(began) }
        return current
    }

    private func streamStopped(_ stopped: ProviderStream) {
        let began = lock.withLock { stream === stopped ? noteStoppedStream() : nil }
        if let began { reportOutage(began) }
    }

    /// A sender session is served through this pool (from its route's choice to the end of its
    /// thread).
    func attach() {
        lock.withLock { users += 1 }
    }

    /// A session attached to this pool ended; true when the pool is retired and now unused: then
    /// it is to be closed (``finish()``: its last verdicts still come).
    func detach() -> Bool {
        lock.withLock {
            users -= 1
            return retired && users == 0
        }
    }

    /// No route uses this pool any more (a reload); true when no session is served through it
    /// either: then it is to be closed (``finish()``).
    func retire() -> Bool {
        lock.withLock {
            retired = true
            return users == 0
        }
    }

    /// The current stream's queue depth and notifications in flight (zero without a stream).
    var occupancy: ProviderStream.Occupancy {
        .total(allStreams.map(\.occupancy))
    }

    /// The current stream and those being finished.
    private var allStreams: [ProviderStream] {
        lock.withLock { (stream.map { [$0] } ?? []) + finishing.map(\.stream) }
    }

    /// Finishes the current stream, and waits until every notification sent on it, or on a
    /// stream another call is finishing, has its verdict (then their connections are closed).
    func finish() async {
        let waits: [Task<Void, Never>] = lock.withLock {
            if let current = stream {
                stream = nil
                finishing.append((current, Task { _ = await current.finish() }))
            }
            return finishing.map(\.done)
        }
        for wait in waits { await wait.value }
        lock.withLock { finishing.removeAll { entry in waits.contains(entry.done) } }
    }

    /// Gives up on the current stream and on those ``finish()`` waits for: what is in flight
    /// gets `unconfirmed` (possibly delivered) at once. The bound on the bridge's last verdicts.
    func abandon(_ reason: LegacyAPNsError) {
        for stream in allStreams { stream.abandon(reason) }
    }
}

extension ProviderStream.Occupancy {
    /// The queue depths and notifications in flight of `occupancies` together.
    static func total(_ occupancies: some Sequence<ProviderStream.Occupancy>) -> Self {
        occupancies.reduce(into: ProviderStream.Occupancy()) { total, occupancy in
            total.queued += occupancy.queued
            total.inFlight += occupancy.inFlight
        }
    }
}
