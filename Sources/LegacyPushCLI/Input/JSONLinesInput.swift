internal import APNsRuntime
import LegacyAPNs

#if canImport(Glibc)
    import Glibc
#endif

/// `send --input`: JSON Lines from a file or stdin, checked whole before anything is sent, with
/// flat memory.
///
/// The check parses and validates every line (a bad one is reported with its number before
/// anything connects) and keeps each notification as a ``SpoolRecord`` in an unlinked
/// ``SpoolFile``; the send streams the spool back, so no JSON is parsed twice, what is sent is
/// exactly what was checked (even if the input changes meanwhile), and stdin works like a file.
/// A large regular file is checked in two parts on two threads. Every step runs on threads of its
/// own, never on Swift's cooperative pool.
final class JSONLinesInput: Sendable {
    /// The spools of the parts, in input order.
    private let spools: [SpoolFile]
    /// What the lines were checked for (and so what the spools hold).
    private let validation: JSONLinesCheck.Validation
    /// Which line each notification came from.
    let lines: LineIndex
    /// Notifications in the input (from `firstLine` on).
    var count: Int { lines.count }

    /// Regular files at least this large are checked in two parts.
    static let splitThreshold = 8 * 1024 * 1024

    private init(spools: [SpoolFile], lines: LineIndex, validation: JSONLinesCheck.Validation) {
        self.spools = spools
        self.validation = validation
        self.lines = lines
    }

    /// Reads and checks `path` (`-` is stdin) from line `firstLine` on (earlier lines are
    /// skipped unread, for resuming a send).
    ///
    /// - Throws: ``CLIError`` for unreadable input or an input with no notifications;
    ///   ``LegacyAPNsError`` (`malformedInput`, "line N: ...") for the first bad line.
    static func open(
        _ path: String, validation: JSONLinesCheck.Validation, firstLine: Int = 1, temporaryDirectory: String
    ) async throws -> JSONLinesInput {
        let name = path == "-" ? "stdin" : "'\(path)'"
        let input = try Files.openForReading(path)
        defer { Files.close(input) }
        let check = JSONLinesCheck(validation: validation, firstLine: firstLine, name: name)
        let parts: [JSONLinesCheck.Outcome]
        if firstLine == 1, let size = Files.regularFileSize(input), size >= splitThreshold,
            let middle = await OSThread.run(name: "jsonl-split", { Files.lineStart(in: input, near: size / 2) })
        {
            async let first = OSThread.run(name: "jsonl-check") {
                check.run(input, range: 0..<middle, temporaryDirectory: temporaryDirectory)
            }
            let second = await OSThread.run(name: "jsonl-check") {
                check.run(input, range: middle..<size, temporaryDirectory: temporaryDirectory)
            }
            parts = [await first, second]
        } else {
            parts = [
                await OSThread.run(name: "jsonl-check") {
                    check.run(input, range: nil, temporaryDirectory: temporaryDirectory)
                }
            ]
        }
        // The first failure in input order, numbered from the start of the whole input.
        var lines = LineIndex()
        var linesBefore = 0
        for part in parts {
            if let failure = part.failure { throw failure.error(linesBefore: linesBefore) }
            lines = lines.appending(part.lines, lineOffset: linesBefore)
            linesBefore += part.lineCount
        }
        guard lines.count > 0 else {
            throw CLIError.usage(
                firstLine > 1
                    ? "\(name) holds no notifications from line \(firstLine) on" : "\(name) holds no notifications")
        }
        return JSONLinesInput(spools: parts.compactMap(\.spool), lines: lines, validation: validation)
    }

    /// The checked notifications for the binary protocol as the frames that will carry them, in
    /// input order, for ``PushClient/send(frames:)`` (a notification without an `id` has a nil
    /// identifier: reports name it by its line, ``LineIndex/line(of:)``). Only for an input
    /// opened with ``JSONLinesCheck/Validation/binary(encoder:format:)``.
    func frameBatches() -> FrameBatches { FrameBatches(parts: spools, validation: validation) }

    /// The spools' frame records one after the other, as batches.
    struct FrameBatches: Sequence, Sendable {
        let parts: [SpoolFile]
        let validation: JSONLinesCheck.Validation

        func makeIterator() -> Iterator { Iterator(parts: parts, validation: validation) }

        struct Iterator: IteratorProtocol {
            let parts: [SpoolFile]
            let format: FrameFormat
            let encoder: FrameEncoder
            var part = 0
            var current: SpoolFile.FrameBatches.Iterator?

            init(parts: [SpoolFile], validation: JSONLinesCheck.Validation) {
                self.parts = parts
                guard case .binary(let encoder, let format) = validation else {
                    preconditionFailure("frame batches of an input checked for HTTP/2")
                }
                (self.encoder, self.format) = (encoder, format)
                current = parts.first?.frameBatches(format: format, encoder: encoder).makeIterator()
            }

            mutating func next() -> FrameBatch? {
                while current != nil {
                    if let batch = current!.next() { return batch }
                    part += 1
                    current =
                        part < parts.count
                        ? parts[part].frameBatches(format: format, encoder: encoder).makeIterator() : nil
                }
                return nil
            }
        }
    }

    /// The checked requests for the HTTP/2 API, in input order.
    func requests() -> Records<ProviderRequest> {
        Records(parts: spools.map { $0.records() }) { $0.providerRequest }
    }

    /// The spools' records one after the other, as `Element`s.
    struct Records<Element: Sendable>: Sequence, Sendable {
        let parts: [SpoolFile.Records]
        let convert: @Sendable (SpoolRecord.Decoded) -> Element

        func makeIterator() -> Iterator { Iterator(base: parts.joined().makeIterator(), convert: convert) }

        struct Iterator: IteratorProtocol {
            var base: FlattenSequence<[SpoolFile.Records]>.Iterator
            let convert: @Sendable (SpoolRecord.Decoded) -> Element

            mutating func next() -> Element? { base.next().map(convert) }
        }
    }
}

/// Checks one part of a JSON Lines input and spools what it holds.
struct JSONLinesCheck: Sendable {
    /// What a line must satisfy besides being well-formed.
    enum Validation: Sendable {
        /// Fit a binary frame of `format` under `encoder`'s limits.
        case binary(encoder: FrameEncoder, format: FrameFormat)
        /// Be a request the HTTP/2 API would not refuse (tokens of 32 bytes or more, the push
        /// type's payload limit, its topic suffix and priority, ...), with these defaults applied.
        case http2(topic: String?, pushType: PushType?, usesTokens: Bool)

        var dialect: NotificationLineParser.Dialect {
            switch self {
            case .binary: .binary
            case .http2: .http2
            }
        }

        /// Throws the reason (without a line number) a checked line would be refused.
        func check(_ line: NotificationLineParser.ParsedLine) throws {
            switch self {
            case .binary(let encoder, let format):
                try line.validate(encoder: encoder, format: format)
            case .http2(let topic, let pushType, let usesTokens):
                let payload = Payload(unvalidatedBytes: Array(line.payload))
                var request = try ProviderRequest(
                    deviceToken: line.token, payload: payload, topic: line.topic ?? topic,
                    pushType: line.pushType ?? pushType, apnsID: line.apnsID, expiration: line.expiration,
                    priority: line.priority, collapseID: line.collapseID)
                if request.pushType == nil { request.pushType = .inferred(for: payload) }
                if let (_, explanation) = request.problem(usesTokens: usesTokens) {
                    throw LegacyAPNsError(.malformedInput, explanation)
                }
            }
        }
    }

    let validation: Validation
    /// Lines before this one are skipped unparsed.
    let firstLine: Int
    /// "'path'" or "stdin", for messages.
    let name: String

    /// What checking a part found.
    struct Outcome: Sendable {
        /// The part's notifications (nil when the check failed before making one).
        var spool: SpoolFile?
        /// Where each notification is, with the part's own line numbers.
        var lines = LineIndex()
        /// Lines read in the part (blank ones included).
        var lineCount = 0
        /// The first problem, if any.
        var failure: Failure?
    }

    /// The first problem of a part.
    enum Failure: Sendable {
        /// A bad line, numbered within its part.
        case line(NotificationLineParser.LineError)
        /// Anything else (unreadable input, no room for the spool).
        case other(CLIError)

        /// The error to report once the lines of the parts before are known.
        func error(linesBefore: Int) -> any Error {
            switch self {
            case .line(let failure):
                NotificationLineParser.LineError(line: failure.line + linesBefore, reason: failure.reason).error
            case .other(let error):
                error
            }
        }
    }

    /// Checks the bytes in `range` of `input` (nil: from where it is to its end).
    func run(_ input: Int32, range: Range<Int>?, temporaryDirectory: String) -> Outcome {
        var outcome = Outcome()
        let spool: SpoolFile
        do {
            spool = try SpoolFile(temporaryDirectory: temporaryDirectory)
        } catch let error as CLIError {
            outcome.failure = .other(error)
            return outcome
        } catch {
            outcome.failure = .other(.usage("\(error)"))
            return outcome
        }
        var splitter = LineSplitter()
        let parser = NotificationLineParser(dialect: validation.dialect)
        let handle = { (line: UnsafeRawBufferPointer, number: Int) throws in
            guard number >= firstLine else { return }
            let spooled: Bool? = try parser.withParsedLine(line, lineNumber: number) { parsed in
                do {
                    try validation.check(parsed)
                } catch let error as LegacyAPNsError {
                    throw NotificationLineParser.LineError(line: number, reason: error.reason).error
                }
                if case .binary(_, let format) = validation {
                    try spool.appendFrame(parsed, format: format)
                } else {
                    try spool.append(parsed)
                }
                return true
            }
            if spooled == true { outcome.lines.append(line: number) }
        }
        do {
            try Files.forEachChunk(input, path: name, range: range) { try splitter.feed($0, handle) }
            try splitter.finish(handle)
            try spool.flush()
            outcome.spool = spool
        } catch let error as LegacyAPNsError {
            if let line = error.underlying as? NotificationLineParser.LineError {
                outcome.failure = .line(line)
            } else {
                outcome.failure = .other(.usage(error.reason))
            }
        } catch let error as CLIError {
            outcome.failure = .other(error)
        } catch {
            outcome.failure = .other(.usage("\(error)"))
        }
        outcome.lineCount = splitter.lineNumber
        return outcome
    }
}
