import APNsCore
import APNsCredentials
internal import APNsRuntime
import Synchronization

/// One read of the feedback service, start to end on the calling OS thread: connect, send
/// nothing, read until the service closes, decode, hand out batches.
///
/// It reads and waits through a `Transport` from its `TransportDialer`: TLS to the service in
/// production, a scripted service in memory in the tests (short reads, a close inside a tuple, a
/// failure after some tuples).
///
/// Blocks in `poll(2)` and OpenSSL, so it must never run on Swift's cooperative pool:
/// ``FeedbackReader`` runs it on a thread of its own. Not `Sendable`: it lives and dies there.
///
/// Everything readable is read before a batch is handed out (up to ``Settings/batchByteLimit``),
/// so a slow consumer (or a raw sink that calls `fsync`) makes batches larger rather than more
/// numerous.
struct FeedbackConnection {
    struct Settings: Sendable {
        var endpoint: Endpoint
        var context: TLSContext
        var connectTimeout: Double
        var idleTimeout: Double
        /// Seconds from the handshake to the first byte (or the close); nil: only the idle timeout.
        var firstByteTimeout: Double?
        /// Seconds the whole read may take; nil: no limit.
        var readDeadline: Double?
        var readBufferSize = 64 * 1024
        /// Undecoded bytes gathered before a batch is handed out even though more is readable.
        var batchByteLimit = 256 * 1024
    }

    /// How the read ended.
    struct Outcome {
        var byteCount = 0
        var recordCount = 0
        var failure: LegacyAPNsError?
    }

    let settings: Settings
    let stop: StopFlag
    let rawSink: FeedbackReader.RawSink?
    private let dialer: any TransportDialer

    /// `dialer`: where the connection comes from; nil, TLS to the settings' endpoint.
    init(
        settings: Settings, stop: StopFlag, rawSink: FeedbackReader.RawSink?, dialer: (any TransportDialer)? = nil
    ) {
        self.settings = settings
        self.stop = stop
        self.rawSink = rawSink
        self.dialer = dialer ?? TLSTransportDialer(endpoint: settings.endpoint, context: settings.context)
    }

    /// Runs the read. `deliver` gets each non-empty batch after the raw sink saw its bytes;
    /// returning false stops the read (the outcome is then ``LegacyAPNsError/Code-swift.struct/cancelled``).
    func run(deliver: ([FeedbackRecord]) -> Bool) -> Outcome {
        var outcome = Outcome()
        guard !stop.isSet else {
            outcome.failure = Self.cancelled
            return outcome
        }
        let start = Monotonic.now()
        let readDeadline = settings.readDeadline.map { start + $0 }
        let session: any Transport
        do {
            let connectTimeout = readDeadline.map { Swift.min(settings.connectTimeout, $0 - start) }
            session = try dialer.connect(timeout: connectTimeout ?? settings.connectTimeout)
        } catch {
            outcome.failure = Self.libraryError(error, code: .connectionFailed)
            return outcome
        }
        defer { session.close() }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: settings.readBufferSize, alignment: 16)
        defer { buffer.deallocate() }

        var decoder = FeedbackDecoder()
        var sinkFailure: LegacyAPNsError?
        let peer = settings.endpoint.description

        /// Decodes what is buffered, shows the raw sink its bytes, hands the records out.
        /// Returns the failure that ends the read, if any.
        func handOut() -> LegacyAPNsError? {
            guard decoder.bufferedByteCount >= FeedbackDecoder.headerByteCount else { return nil }
            var batch: [FeedbackRecord] = []
            batch.reserveCapacity(decoder.bufferedByteCount / 38 + 1)
            var decodingFailure: LegacyAPNsError?
            do {
                try decoder.decodeAvailable(into: &batch) { raw in
                    outcome.byteCount += raw.count
                    guard let rawSink, sinkFailure == nil else { return }
                    do {
                        try rawSink(Array(raw))
                    } catch {
                        // Keep reading: the service forgets what it sends, so the rest is still
                        // worth delivering even though it cannot be saved.
                        sinkFailure = Self.libraryError(error, code: .fileError)
                    }
                }
            } catch {
                let reason = (error as? LegacyAPNsError)?.reason ?? "\(error)"
                decodingFailure = LegacyAPNsError(
                    .malformedFrame, "the feedback service at \(peer) sent a malformed tuple: \(reason)")
            }
            if !batch.isEmpty {
                outcome.recordCount += batch.count
                guard deliver(batch) else { return Self.cancelled }
            }
            return decodingFailure
        }

        let connected = Monotonic.now()
        var idleDeadline = connected + settings.idleTimeout
        // Until the first byte: the shorter first-byte timeout, if any.
        var silenceDeadline = settings.firstByteTimeout.map { Swift.min(idleDeadline, connected + $0) } ?? idleDeadline
        var receivedAnything = false
        reading: while true {
            if stop.isSet {
                outcome.failure = Self.cancelled
                break
            }
            let waitEvents: Readiness
            switch session.read(into: buffer) {
            case .done(let count):
                decoder.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                idleDeadline = Monotonic.now() + settings.idleTimeout
                silenceDeadline = idleDeadline
                receivedAnything = true
                if decoder.bufferedByteCount >= settings.batchByteLimit, let failure = handOut() {
                    outcome.failure = failure
                    break reading
                }
                continue reading
            case .wantRead:
                waitEvents = .readable
            case .wantWrite:
                waitEvents = .writable
            case .closed:
                if let failure = handOut() {
                    outcome.failure = failure
                } else if decoder.bufferedByteCount > 0 {
                    outcome.failure = LegacyAPNsError(
                        .malformedFrame,
                        "the feedback service at \(peer) closed the connection inside a tuple: "
                            + "\(decoder.bufferedByteCount) bytes of an incomplete tuple at byte "
                            + "\(decoder.consumedByteCount) were dropped after \(outcome.recordCount) complete tuples")
                }
                break reading
            case .failed(let error):
                outcome.failure = handOut() ?? error
                break reading
            }
            // Nothing readable now: hand out what is complete, then wait (in slices, to notice
            // a stop request).
            if let failure = handOut() {
                outcome.failure = failure
                break reading
            }
            while true {
                let deadline = Swift.min(silenceDeadline, readDeadline ?? .infinity)
                if session.wait(for: waitEvents, timeout: Swift.max(0, Swift.min(0.1, deadline - Monotonic.now()))) {
                    break
                }
                if stop.isSet { continue reading }
                let now = Monotonic.now()
                if let readDeadline, now >= readDeadline {
                    outcome.failure = LegacyAPNsError(
                        .timedOut,
                        "the feedback service at \(peer) was still sending after \(formatSeconds(settings.readDeadline!)), "
                            + "the deadline for one read: stopped after \(outcome.recordCount) complete tuples",
                        timeLimit: .readDeadline)
                    break reading
                }
                if now >= silenceDeadline {
                    outcome.failure = silenceFailure(
                        peer: peer, receivedAnything: receivedAnything,
                        completeTuples: decoder.consumedByteCount > 0 ? outcome.recordCount : nil)
                    break reading
                }
            }
        }
        if outcome.failure == nil { outcome.failure = sinkFailure }
        return outcome
    }

    /// The failure for a silence: the idle timeout, or, before the first byte, a peer that does
    /// not speak the feedback protocol.
    func silenceFailure(peer: String, receivedAnything: Bool, completeTuples: Int?) -> LegacyAPNsError {
        if !receivedAnything, let firstByte = settings.firstByteTimeout, firstByte < settings.idleTimeout {
            let port = settings.endpoint.port
            let guess =
                port == 2195 || port == 2295
                ? "is this a gateway port (\(port))? The feedback service is usually on 2196"
                : "is this a gateway port (2195) or another service?"
            return LegacyAPNsError(
                .protocolRefused,
                "\(peer) sent nothing and kept the connection open for \(formatSeconds(firstByte)): the feedback "
                    + "service sends its list and closes at once; \(guess)", timeLimit: .firstByte)
        }
        return LegacyAPNsError(
            .timedOut,
            "the feedback service at \(peer) sent nothing for \(formatSeconds(settings.idleTimeout))"
                + (completeTuples.map { " after \($0) tuple\($0 == 1 ? "" : "s")" } ?? ""), timeLimit: .idle)
    }

    static let cancelled = LegacyAPNsError(.cancelled, "the feedback read was cancelled")

    /// `error` as a ``LegacyAPNsError``, or wrapped in one with `code`.
    static func libraryError(_ error: any Error, code: LegacyAPNsError.Code) -> LegacyAPNsError {
        (error as? LegacyAPNsError) ?? LegacyAPNsError(code, "\(error)")
    }
}

/// A flag a connection thread checks to stop early (task cancellation, an abandoned stream).
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)

    func set() { value.store(true, ordering: .releasing) }

    var isSet: Bool { value.load(ordering: .acquiring) }
}
