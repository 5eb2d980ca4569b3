internal import APNsRuntime
import Dispatch
import FeedbackClient
import LegacyAPNs
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

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
        static let feedback = Option<Endpoint>(
            "feedback", "host:port", help: "Another feedback service, e.g. a local simulator (127.0.0.1:2196)."
        ) { text in
            guard let endpoint = try? Endpoint(parsing: text) else {
                throw CLIError.usage("--feedback expects HOST:PORT, got '\(text)'")
            }
            return endpoint
        }
        static let sandbox = Flag("sandbox", help: "Use feedback.sandbox.push.apple.com:2196 instead of production.")
        static let timeout = Option<Duration>.seconds(
            "timeout", help: "Seconds to connect, and the longest silence from the service during a read.",
            default: .seconds(30))
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

                --once (the default) reads the list once. --interval polls forever, SECONDS after \
                each poll ends; failed polls are reported on stderr and retried after 1, 2, 4 ... \
                seconds (at most 5 minutes). Ctrl-C or SIGTERM stops after the current poll, with \
                exit status 0.

                Exit status: 0 when the list was read (even when empty); 2 for bad options, \
                unreadable files, a wrong passphrase, or when --save cannot write; 3 when the \
                connection or TLS fails, or the service's stream ends inside a tuple or is \
                malformed (the complete tuples before the problem are saved and printed first).
                """,
            options: [
                Options.once.spec, Options.interval.spec, Options.maximumFailures.spec, Options.json.spec,
                Options.save.spec, Options.feedback.spec, Options.sandbox.spec, ConnectionOptions.caFile.spec,
                Options.timeout.spec,
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
        let reader = try FeedbackReader(configuration: configuration)
        // Opened before connecting: a file we cannot write must not cost the service's list.
        let save = try arguments.value(Options.save).map { try SaveFile(path: $0) }
        let json = arguments.isSet(Options.json)
        let format = { (record: FeedbackRecord) -> String in json ? record.jsonLine : record.textLine }

        if let interval {
            return try await poll(
                reader, interval: interval, maximumFailures: maximumFailures, save: save, format: format,
                console: console)
        }
        return try await readOnce(reader, save: save, format: format, console: console)
    }

    static func service(_ arguments: ParsedArguments) throws -> FeedbackService {
        guard let endpoint = try arguments.value(Options.feedback) else {
            return arguments.isSet(Options.sandbox) ? .sandbox : .production
        }
        if arguments.isSet(Options.sandbox) { throw CLIError.usage("give either --sandbox or --feedback, not both") }
        return .custom(host: endpoint.host, port: endpoint.port)
    }

    /// `--once`: stream the tuples to stdout as they arrive.
    static func readOnce(
        _ reader: FeedbackReader, save: SaveFile?, format: (FeedbackRecord) -> String, console: Console
    ) async throws -> ExitStatus {
        do {
            for try await record in reader.records(rawSink: save?.sink) {
                console.print(format(record))
            }
        } catch let error as LegacyAPNsError {
            throw failure(error, save: save, console: console)
        }
        if let saveFailure = save?.failure { throw saveFailure }
        return .success
    }

    /// `--interval`: poll until SIGINT or SIGTERM, then finish the current poll and exit 0.
    static func poll(
        _ reader: FeedbackReader, interval: Duration, maximumFailures: Int?, save: SaveFile?,
        format: (FeedbackRecord) -> String, console: Console
    ) async throws -> ExitStatus {
        let stop = StopRequest()
        let signals = InterruptWatch { stop.stop() }
        defer { signals.cancel() }
        let poller = FeedbackPoller(
            reader: reader, interval: interval, maximumConsecutiveFailures: maximumFailures,
            clock: InterruptibleClock(stop: stop), rawSink: save?.sink)
        do {
            for try await poll in poller {
                for record in poll.records { console.print(format(record)) }
                console.flush()
                if let saveFailure = save?.failure { throw saveFailure }
                if let failure = poll.failure, poll.consecutiveFailures < maximumFailures ?? .max {
                    let wait = poll.delayBeforeNextPoll.inSeconds
                    console.warning(
                        "poll \(poll.number) failed: \(failure.reason)"
                            + (stop.isStopped ? "" : "; next poll in \(formatSeconds(wait))"))
                }
                if stop.isStopped { break }
            }
        } catch let error as LegacyAPNsError {
            throw failure(error, save: save, console: console)
        }
        return .success
    }

    /// The error to end with: a malformed or truncated stream is the service's fault, not the
    /// user's input, so it exits 3 like a connection failure. A save failure next to a read
    /// failure is reported too (as a warning, before the error line).
    static func failure(_ error: LegacyAPNsError, save: SaveFile?, console: Console) -> any Error {
        if let saveFailure = save?.failure, saveFailure != error {
            console.warning("--save stopped: \(saveFailure.reason)")
        }
        if error.code == .malformedFrame { return CLIError.connection(error.reason) }
        return error
    }
}

/// `--save PATH`: an append-only evidence file. Every batch of raw tuples is written and synced
/// to disk before the tuples are printed.
final class SaveFile: @unchecked Sendable {
    // @unchecked: the descriptor never changes after init; `append` is called by one connection
    // thread at a time (reads are sequential), and `failure` is guarded by a mutex.
    let path: String
    private let descriptor: Int32
    private let failureState = Mutex<LegacyAPNsError?>(nil)

    /// Opens (or creates, mode 0600) `path` for appending.
    init(path: String) throws {
        self.path = path
        var info = stat()
        let existed = stat(path, &info) == 0
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw CLIError.usage("cannot open '\(path)' for --save: \(Files.errnoDescription())")
        }
        // The umask can only take bits away from 0600; make a new file exactly 0600 anyway.
        if !existed { _ = fchmod(descriptor, 0o600) }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// The first write or sync failure, if any.
    var failure: LegacyAPNsError? { failureState.withLock { $0 } }

    /// The raw sink for the reader.
    var sink: FeedbackReader.RawSink { { [self] bytes in try self.append(bytes) } }

    /// Appends `bytes` and syncs them to disk.
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        do {
            if FileDescriptor.writeAll(bytes, to: descriptor) != nil {
                throw LegacyAPNsError(.fileError, "cannot write '\(path)': \(Files.errnoDescription())")
            }
            if fsync(descriptor) != 0 {
                throw LegacyAPNsError(.fileError, "cannot sync '\(path)' to disk: \(Files.errnoDescription())")
            }
        } catch let error as LegacyAPNsError {
            failureState.withLock { if $0 == nil { $0 = error } }
            throw error
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
