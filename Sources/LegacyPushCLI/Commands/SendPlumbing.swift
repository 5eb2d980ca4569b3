import APNsInput
internal import APNsRuntime
import CommandLineKit
import HTTP2Client
import LegacyAPNs

/// What both sends take: the notifications from flags (`--token`), or a checked JSON Lines file.
enum SendInput<Item: SendItem>: Sendable, SendInputNaming {
    case list([Item])
    case file(JSONLinesInput)

    var count: Int {
        switch self {
        case .list(let list): list.count
        case .file(let file): file.count
        }
    }

    /// The line (JSON Lines) of the notification at `position`; nil for flag input.
    func line(of position: UInt64) -> Int? {
        switch self {
        case .list: nil
        case .file(let file): file.lines.line(of: Int(position))
        }
    }

    /// The identifier a report shows: the caller's `id`, else the line number (JSON Lines), else
    /// the position.
    func reportedID(identifier: UInt32?, position: UInt64) -> UInt64 {
        identifier.map(UInt64.init) ?? line(of: position).map(UInt64.init) ?? position
    }

    func notification(at position: Int) -> (identifier: UInt32?, token: DeviceToken)? {
        guard case .list(let list) = self, list.indices.contains(position - 1) else { return nil }
        return (list[position - 1].identifier, list[position - 1].sendToken)
    }
}

/// A notification of flag input, as reports name it.
protocol SendItem: Sendable {
    var identifier: UInt32? { get }
    var sendToken: DeviceToken { get }
}

extension PushNotification: SendItem {
    var sendToken: DeviceToken { token }
}

extension ProviderRequest: SendItem {
    var sendToken: DeviceToken { deviceToken }
}

/// A client's event, as the shared plumbing sees it: what the progress line counts, and the
/// rejection (printed as it happens), if it is one.
protocol SendEvent: Sendable {
    associatedtype Rejected: Sendable
    var rejection: Rejected? { get }
    func count(in progress: ProgressLine)
}

extension PushEvent: SendEvent {
    var rejection: Rejection? {
        if case .rejected(_, let rejection) = self { return rejection }
        return nil
    }
    func count(in progress: ProgressLine) { progress.observe(self) }
}

extension ProviderEvent: SendEvent {
    var rejection: ProviderRejection? {
        if case .rejected(_, let rejection) = self { return rejection }
        return nil
    }
    func count(in progress: ProgressLine) { progress.observe(self) }
}

/// The client of a send: Ctrl-C settles its task, a second one abandons it.
protocol SendClient: Sendable {
    var notificationsInFlight: Int { get }
    func abandon()
}

extension PushClient: SendClient {}
extension ProviderClient: SendClient {}

/// What a send prints: each rejection as it happens, then the summary.
protocol SendPrinter: Sendable {
    associatedtype Rejected: Sendable
    associatedtype Report: SendOutcome
    func rejected(_ rejection: Rejected)
    func summary(_ report: Report, endpoint: Endpoint)
}

/// How a send ended.
protocol SendOutcome: Sendable {
    var failure: LegacyAPNsError? { get }
    var isCompleteSuccess: Bool { get }
}

extension SendReport: SendOutcome {}
extension ProviderSendReport: SendOutcome {}

extension SendCommand {
    /// `--input PATH` (checked whole with `validation`), or the notifications `fromFlags` makes;
    /// `--from-line` only with `--input`, and none of `perNotification` with it (the lines carry
    /// them).
    static func input<Item>(
        _ arguments: ParsedArguments, perNotification: [String], validation: JSONLinesInput.Validation,
        fromFlags: () throws -> [Item]
    ) async throws -> SendInput<Item> {
        guard let path = try arguments.value(Options.input) else {
            if arguments.has(Options.fromLine) { throw CLIError.usage("--from-line needs --input") }
            return .list(try fromFlags())
        }
        if let conflicting = arguments.given(perNotification).first {
            throw CLIError.usage("--\(conflicting) cannot be combined with --input (the lines carry it)")
        }
        return .file(
            try await JSONLinesInput.open(
                path, validation: validation, firstLine: try arguments.value(Options.fromLine) ?? 1,
                temporaryDirectory: Files.temporaryDirectory))
    }

    /// The one send path of both protocols: a progress line on a terminal (unless `--quiet`), each
    /// rejection printed as it happens, the send on a task that Ctrl-C settles and a second
    /// Ctrl-C abandons, then the cause of a failure, the summary and the exit status. The client
    /// (`makeClient`, given the event sink), the send itself and a last look at the report
    /// (`amend`) are the protocol's.
    static func deliver<Client: SendClient, Event: SendEvent, Output: SendPrinter>(
        _ arguments: ParsedArguments, console: Console, total: Int, output: Output, endpoint: Endpoint,
        makeClient: (@escaping @Sendable (Event) -> Void) throws -> Client,
        send: @escaping @Sendable (Client) async -> Output.Report,
        amend: (inout Output.Report) -> Void = { _ in }
    ) async throws -> ExitStatus where Event.Rejected == Output.Rejected {
        let progress =
            console.stderrIsTerminal && !arguments.isSet(CommonOptions.quiet)
            ? ProgressLine(console: console, total: total) : nil
        let client = try makeClient { event in
            if let progress { event.count(in: progress) }
            if let rejection = event.rejection {
                // Erase the progress line only when the rejection goes to the same terminal.
                if console.stdoutIsTerminal { progress?.clear() }
                output.rejected(rejection)
            }
        }
        progress?.start()
        let task = Task { await send(client) }
        let interrupt = InterruptWatch.send(
            console: console, progress: progress, inFlight: { client.notificationsInFlight },
            settle: { task.cancel() }, abandon: { client.abandon() })
        var report = await task.value
        interrupt.cancel()
        progress?.finish()
        amend(&report)

        // The cause first, then the accounting.
        if let failure = report.failure, failure.code != .cancelled { console.error(failure.reason) }
        output.summary(report, endpoint: endpoint)
        if let failure = report.failure {
            return failure.code == .cancelled ? .interrupted : LegacyPush.exitStatus(for: failure)
        }
        return report.isCompleteSuccess ? .success : .refused
    }
}
