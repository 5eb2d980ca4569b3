import APNsCore
internal import APNsRuntime
import HTTP2Client

/// The bridge's side of the HTTP/2 API: one ``ProviderClient`` and its current long-running
/// ``ProviderStream``, shared by every sender connection.
///
/// A stream stops for good when the upstream stays unreachable past the client's retry budget or
/// refuses the credentials; its notifications then get `unconfirmed` verdicts (which senders hear
/// as status 10). The next submission after a pause opens a fresh stream, so the bridge recovers
/// when the upstream does, without a restart. While no stream may be opened, submissions fail at
/// once (status 10 again): the senders' own reconnect loops carry the retry.
final class BridgeUpstream: @unchecked Sendable {
    // @unchecked: `stream`, `finishing`, `failures` and `nextAttempt` are guarded by `lock`; the rest is immutable.
    private let lock = ConditionLock()
    private let client: ProviderClient
    private var stream: ProviderStream?
    /// The stream ``finish()`` waits for (``abandon(_:)`` must still reach it).
    private var finishing: ProviderStream?
    private var failures = 0
    private var nextAttempt: Double = 0
    private var lastFailure: LegacyAPNsError?
    private let pause = Backoff(initialDelay: .milliseconds(500), multiplier: 2, maximumDelay: .seconds(30))

    init(client: ProviderClient) {
        self.client = client
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
        lock.withLock {
            if let stream, stream.failure == nil { return stream }
            if let stream, let failure = stream.failure {
                lastFailure = failure
                self.stream = nil
                failures += 1
                nextAttempt = Monotonic.now() + pause.delay(afterFailures: failures).inSeconds
            }
            guard Monotonic.now() >= nextAttempt else { return nil }
            let fresh = client.openStream()
            stream = fresh
            return fresh
        }
    }

    private func streamStopped(_ stopped: ProviderStream) {
        lock.withLock {
            guard stream === stopped, let failure = stopped.failure else { return }
            lastFailure = failure
            stream = nil
            failures += 1
            nextAttempt = Monotonic.now() + pause.delay(afterFailures: failures).inSeconds
        }
    }

    /// An answer arrived upstream: the current stream works, the pause starts from scratch next time.
    func noteProgress() {
        lock.withLock { if failures != 0 { failures = 0 } }
    }

    /// Finishes the current stream: waits until every notification sent has its verdict.
    func finish() async {
        let current: ProviderStream? = lock.withLock {
            finishing = stream
            stream = nil
            return finishing
        }
        _ = await current?.finish()
        lock.withLock { finishing = nil }
    }

    /// Gives up on the current stream, or on the one ``finish()`` waits for: what is in flight
    /// gets `unconfirmed` (possibly delivered) at once. The bound on the bridge's last verdicts.
    func abandon(_ reason: LegacyAPNsError) {
        let current: ProviderStream? = lock.withLock { stream ?? finishing }
        current?.abandon(reason)
    }
}
