internal import APNsRuntime
import CommandLineKit
import Dispatch
import FeedbackClient
import LegacyAPNs
import Synchronization

/// `legacy-push feedback`: read the feedback service once, or poll it at an interval.
enum FeedbackCommand {
    enum Options {
        static let once = Flag("once", help: "Read the list once and exit (the default).")
        static let interval = Option<Duration>.seconds(
            "interval",
            help: "Poll forever, waiting this long after each poll (fractions allowed; Apple asked for daily).")
        static let maximumFailures = Option<Int>.integer(
            "max-failures", help: "With --interval: stop with exit status 3 after this many failed polls in a row.",
            range: 1...Int.max, defaultText: "never")
        static let json = Flag("json", help: "Print one JSON object per tuple.")
        static let save = Option<String>.text(
            "save", "path", help: "Append the raw tuples to this file (mode 0600), synced before printing.")
        static let feedback = Option<Endpoint>.endpoint(
            "feedback", help: "Another feedback service, e.g. a local simulator (127.0.0.1:2196).", examplePort: 2196)
        static let sandbox = Flag("sandbox", help: "Use feedback.sandbox.push.apple.com:2196 instead of production.")
        static let timeout = Option<Duration>.seconds(
            "timeout", help: "Seconds to connect, and the longest silence from the service during a read.",
            default: .seconds(30))
        static let firstByteTimeout = Option<Duration>.seconds(
            "first-byte-timeout",
            help: "A peer that sends nothing this long after the handshake and keeps the connection open does not "
                + "speak the feedback protocol (a gateway port, say): exit 3 saying so.",
            default: .seconds(5))
        static let deadline = Option<Duration>.seconds(
            "deadline",
            help: "The longest one read may take, however steadily the service trickles tuples; the tuples read "
                + "by then are printed and saved, then exit 3.",
            default: .seconds(300))
    }

    static var spec: CommandSpec {
        CommandSpec(
            name: "feedback",
            abstract: "Read or poll the feedback service's list of stale device tokens.",
            discussion: """
                Connects to the feedback service with the provider certificate, sends nothing, and \
                prints every tuple the service sends until it closes the connection, one line each: \
                '2026-01-31T12:00:00Z <token hex>' (with --json: {"time":1769860800,"token":"<hex>"}). \
                Times are unsigned UNIX seconds, so 0xFFFFFFFF is 2106-02-07T06:28:15Z.

                The service forgets every tuple it has sent. --save PATH appends the raw tuples \
                (exactly the bytes received, whole tuples only) to PATH as they arrive, created \
                with mode 0600, and syncs them to disk before printing them, so a crash or a broken \
                pipe loses nothing. Apple's rule: stop sending to a token only if the app did not \
                register it again after the tuple's time.

                An empty list prints nothing on stdout and "0 tuples" on stderr (for each empty \
                poll with --interval, "poll N: 0 tuples"), so scripts reading stdout see only tuples.

                --once (the default) reads the list once. --interval polls forever, SECONDS after \
                each poll ends; failed polls are reported on stderr and retried after 1, 2, 4 ... \
                seconds (at most 5 minutes). Ctrl-C or SIGTERM stops after the current poll, with \
                exit status 0.

                Time limits: --timeout for connecting and for any silence once tuples flow; \
                --first-byte-timeout for the silence right after the handshake (a feedback service \
                sends its list, or closes, at once: a peer that does neither is not one, typically a \
                gateway port, 2195); --deadline for the whole read, so a service trickling tuples \
                cannot keep a run going forever.

                No tuple read is ever lost. --save holds every tuple before it is printed, and \
                always ends on a tuple boundary: on a full disk or a file size limit it is cut back \
                to the last whole tuple, and the error says so. When stdout fails (a full disk, a \
                closed pipe), the tuples that may not have been printed and are not in --save are \
                written to feedback-unprinted-<time>.bin (raw tuples, mode 0600) in the current \
                directory, else in $TMPDIR, and the error line names it.

                Exit status: 0 when the list was read (even when empty); 2 for bad options, \
                unreadable files, a wrong passphrase, when --save cannot write, or when stdout \
                cannot be written; 3 when the connection or TLS fails, the peer is not a feedback \
                service, a time limit ends the read, or the service's stream ends inside a tuple or \
                is malformed (the complete tuples before the problem are saved and printed first).
                """,
            options: [
                Options.once.spec, Options.interval.spec, Options.maximumFailures.spec, Options.json.spec,
                Options.save.spec, Options.feedback.spec, Options.sandbox.spec, ConnectionOptions.caFile.spec,
                Options.timeout.spec, Options.firstByteTimeout.spec, Options.deadline.spec,
            ] + CredentialOptions.all,
            run: { arguments, console in try await run(arguments, console: console) },
            examples: [
                "legacy-push feedback --cert push.p12 --passphrase-env P12_PASS --sandbox",
                "legacy-push feedback --cert push.p12 --json --save feedback.bin | jq -r .token",
                "legacy-push feedback --cert push.p12 --interval 86400 --save feedback.bin",
                "legacy-push feedback --cert client.p12 --feedback 127.0.0.1:2196 --ca-file ca.pem",
            ])
    }

    static func run(_ arguments: ParsedArguments, console: Console) async throws -> ExitStatus {
        // Options first, so a typo never costs a passphrase prompt or a connection.
        let interval = try arguments.value(Options.interval)
        if arguments.isSet(Options.once), interval != nil {
            throw CLIError.usage("give either --once or --interval, not both")
        }
        let maximumFailures = try arguments.value(Options.maximumFailures)
        if maximumFailures != nil, interval == nil { throw CLIError.usage("--max-failures needs --interval") }
        let timeout = try arguments.required(Options.timeout)
        let firstByteTimeout = try arguments.required(Options.firstByteTimeout)
        let deadline = try arguments.required(Options.deadline)
        let service = try service(arguments)
        let trust: TLSConfiguration.Trust
        if let caPath = try arguments.value(ConnectionOptions.caFile) {
            trust = try CredentialOptions.naming(caPath) { try .pem(Files.read(caPath)) }
        } else {
            trust = .systemDefault
        }
        let identity = try CredentialOptions.loadIdentity(arguments, console: console)

        var configuration = FeedbackReader.Configuration(
            service: service, tls: TLSConfiguration(identity: identity, trust: trust))
        configuration.connectTimeout = timeout
        configuration.idleTimeout = timeout
        configuration.firstByteTimeout = firstByteTimeout
        configuration.readDeadline = deadline
        let reader = try FeedbackReader(configuration: configuration)
        // Opened before connecting: a file we cannot write must not cost the service's list.
        let save = try arguments.value(Options.save).map { try SaveFile(path: $0) }
        let json = arguments.isSet(Options.json)
        let output = FeedbackOutput(
            console: console, save: save, format: { json ? $0.jsonLine : $0.textLine }, now: Host.unixTime())

        let status: ExitStatus
        do {
            if let interval {
                status = try await poll(
                    reader, interval: interval, maximumFailures: maximumFailures, output: output, console: console)
            } else {
                status = try await readOnce(reader, output: output, console: console)
            }
        } catch {
            // Whatever ended the read, first account for the tuples stdout did not take.
            if let unprinted = output.finish() { console.warning(unprinted) }
            throw error
        }
        if let unprinted = output.finish() { throw CLIError.usage(unprinted) }
        return status
    }

    static func service(_ arguments: ParsedArguments) throws -> FeedbackService {
        guard let endpoint = try arguments.value(Options.feedback) else {
            return arguments.isSet(Options.sandbox) ? .sandbox : .production
        }
        if arguments.isSet(Options.sandbox) { throw CLIError.usage("give either --sandbox or --feedback, not both") }
        return .custom(host: endpoint.host, port: endpoint.port)
    }

    /// `--once`: stream the tuples to stdout as they arrive.
    static func readOnce(_ reader: FeedbackReader, output: FeedbackOutput, console: Console) async throws
        -> ExitStatus
    {
        do {
            for try await record in reader.records(rawSink: output.save?.sink) {
                output.print(record)
            }
        } catch let error as LegacyAPNsError {
            throw failure(error, output: output, console: console)
        }
        if let saveFailure = output.save?.failure { throw saveFailed(saveFailure, output: output) }
        if output.count == 0 { console.diagnostic("0 tuples") }
        return .success
    }

    /// `--interval`: poll until SIGINT or SIGTERM, then finish the current poll and exit 0. A
    /// failed stdout ends polling after the current poll (its tuples are kept, see
    /// ``FeedbackOutput``).
    static func poll(
        _ reader: FeedbackReader, interval: Duration, maximumFailures: Int?, output: FeedbackOutput,
        console: Console
    ) async throws -> ExitStatus {
        let stop = StopRequest()
        let signals = InterruptWatch { stop.stop() }
        defer { signals.cancel() }
        let poller = FeedbackPoller(
            reader: reader, interval: interval, maximumConsecutiveFailures: maximumFailures,
            clock: InterruptibleClock(stop: stop), rawSink: output.save?.sink)
        var saveFailure: LegacyAPNsError?
        do {
            for try await poll in poller {
                for record in poll.records { output.print(record) }
                let printed = output.checkpoint()
                saveFailure = output.save?.failure
                if saveFailure != nil { break }
                if let failure = poll.failure, poll.consecutiveFailures < maximumFailures ?? .max {
                    let wait = poll.delayBeforeNextPoll.inSeconds
                    console.warning(
                        "poll \(poll.number) failed: \(failure.reason)"
                            + (stop.isStopped || !printed ? "" : "; next poll in \(formatSeconds(wait))"))
                } else if poll.failure == nil, poll.records.isEmpty {
                    console.diagnostic("poll \(poll.number): 0 tuples")
                }
                if stop.isStopped || !printed { break }
            }
        } catch let error as LegacyAPNsError {
            throw failure(error, output: output, console: console)
        }
        if let saveFailure { throw saveFailed(saveFailure, output: output) }
        return .success
    }

    /// A `--save` failure: the file ends on a tuple boundary; the tuples after it were printed.
    static func saveFailed(_ error: LegacyAPNsError, output: FeedbackOutput) -> LegacyAPNsError {
        let saved = output.save?.savedTupleCount ?? 0
        let rest = output.count - saved
        guard rest > 0, output.stdoutFailure == nil else { return error }
        return LegacyAPNsError(
            error.code,
            "\(error.reason); the \(rest) tuple\(rest == 1 ? "" : "s") after them were printed but not saved")
    }

    /// The error to end with: a malformed or truncated stream is the service's fault, not the
    /// user's input, so it exits 3 like a connection failure. A save failure next to a read
    /// failure is reported too (as a warning, before the error line). Time limits name the option
    /// that sets them.
    static func failure(_ error: LegacyAPNsError, output: FeedbackOutput, console: Console) -> any Error {
        let save = output.save
        // The read ended because the raw sink failed: that is the --save failure (a file error; the
        // reader's own failures never are one).
        if let saveFailure = save?.failure, error.code == .fileError { return saveFailed(saveFailure, output: output) }
        if let saveFailure = save?.failure {
            console.warning("--save stopped: \(saveFailure.reason)")
        }
        if error.code == .malformedFrame { return CLIError.connection(error.reason) }
        switch error.timeLimit {
        case .readDeadline?: return CLIError.connection(error.reason + " (--deadline SECONDS allows longer)")
        case .firstByte?: return CLIError.connection(error.reason + " (--first-byte-timeout SECONDS waits longer)")
        default: return error
        }
    }
}

/// A stop request from a signal: wakes a waiting ``InterruptibleClock`` at once; a poll in
/// progress is left to finish.
final class StopRequest: Sendable {
    private struct State {
        var isStopped = false
        var waiters: [ObjectIdentifier: Handoff<Void>] = [:]
    }

    private let state = Mutex(State())

    var isStopped: Bool { state.withLock { $0.isStopped } }

    func stop() {
        let waiters = state.withLock { state in
            state.isStopped = true
            defer { state.waiters = [:] }
            return state.waiters.values
        }
        for waiter in waiters { waiter.put(()) }
    }

    /// Suspends until ``stop()`` is called or the task is cancelled; always throws
    /// `CancellationError`.
    func wait() async throws {
        let waiter = Handoff<Void>()
        let alreadyStopped = state.withLock { state in
            if !state.isStopped { state.waiters[ObjectIdentifier(waiter)] = waiter }
            return state.isStopped
        }
        if !alreadyStopped {
            // A cancellation that came first runs the handler at once: it is never missed.
            await withTaskCancellationHandler {
                await waiter.take()
            } onCancel: {
                waiter.put(())
            }
            _ = state.withLock { $0.waiters.removeValue(forKey: ObjectIdentifier(waiter)) }
        }
        throw CancellationError()
    }
}

/// `ContinuousClock` whose sleep ends early (throwing) when a ``StopRequest`` fires.
struct InterruptibleClock: FeedbackClock {
    let stop: StopRequest

    func sleep(for duration: Duration) async throws {
        if stop.isStopped { throw CancellationError() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await ContinuousClock().sleep(for: duration) }
            group.addTask { try await stop.wait() }
            defer { group.cancelAll() }
            try await group.next()
        }
    }
}
