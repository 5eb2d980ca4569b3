internal import APNsRuntime
import LegacyAPNs

/// A JSON Lines file of notifications (one `{"token":"<hex>","payload":{...},"id":7}` a line),
/// checked whole before anything is sent, with flat memory: the input of `legacy-push send
/// --input`, and of any program that sends such a file with `PushClient.send(frames:)` or
/// `ProviderClient.send(_:)`.
///
/// ```swift
/// let input = try await JSONLinesInput.open(
///     "batch.jsonl", validation: .binary(encoder: FrameEncoder(), format: .enhanced))
/// let report = await client.send(frames: input.frameBatches())
/// for rejected in report.rejected {
///     print("line \(input.lines.line(of: Int(rejected.position))): \(rejected.status)")
/// }
/// ```
///
/// The check parses and validates every line (a bad one is reported with its number before
/// anything connects) and keeps each notification in a spool (`SpoolFile`): for the binary protocol
/// as the frame record the send writes, in memory up to ``memoryBudget`` and then in an unlinked
/// temporary file; for the HTTP/2 API as a `SpoolRecord` in the file. The send streams the
/// spool back, so no JSON is parsed twice, what is sent is exactly what was checked (even if the
/// input changes meanwhile), and stdin works like a file.
/// A large regular file is checked in two parts on two threads. Every step runs on threads of its
/// own, never on Swift's cooperative pool.
public final class JSONLinesInput: Sendable {
    /// The spools of the parts, in input order.
    private let spools: [SpoolFile]
    /// What the lines were checked for (and so what the spools hold).
    private let validation: Validation
    /// Which line each notification came from.
    public let lines: LineIndex
    /// Notifications in the input (from `firstLine` on).
    public var count: Int { lines.count }

    /// Regular files at least this large are checked in two parts.
    public static let splitThreshold = 8 * 1024 * 1024

    /// Bytes of frame records the parts of a binary send's input keep in memory together (about
    /// 230,000 notifications with 100-byte payloads), shared equally among the parts; the rest
    /// are spooled to the file. Enough that a common send never copies its frames through the
    /// kernel, small enough that a send of any size stays well under 64 MB.
    public static let memoryBudget = 32 * 1024 * 1024

    private init(spools: [SpoolFile], lines: LineIndex, validation: Validation) {
        self.spools = spools
        self.validation = validation
        self.lines = lines
    }

    /// Reads and checks `path` (`-` is stdin) from line `firstLine` on (earlier lines are
    /// skipped unread, for resuming a send). A binary send's frame records are kept in memory up
    /// to `memoryBudget` bytes (all parts together), the rest in an unlinked spool file in
    /// `temporaryDirectory` (the library reads no environment: pass `$TMPDIR` if you honour it).
    /// The work runs on threads of its own, never on Swift's cooperative pool.
    ///
    /// - Throws: ``LegacyAPNsError``: `.malformedInput` for the first bad line ("line N: ...",
    ///   its `underlying` a `NotificationLineParser.LineError` with the number and the reason) or
    ///   an input with no notifications; `.fileError` for input that cannot be read and a spool
    ///   that cannot be written.
    public static func open(
        _ path: String, validation: Validation, firstLine: Int = 1, temporaryDirectory: String = "/tmp",
        memoryBudget: Int = memoryBudget
    ) async throws -> JSONLinesInput {
        let name = path == "-" ? "stdin" : "'\(path)'"
        let input = try InputFile.openForReading(path)
        defer { InputFile.close(input) }
        let parts: [JSONLinesCheck.Outcome]
        let budget: Int
        if case .binary = validation { budget = memoryBudget } else { budget = 0 }
        if firstLine == 1, let size = InputFile.regularFileSize(input), size >= splitThreshold,
            let middle = await OSThread.run(name: "jsonl-split", { InputFile.lineStart(in: input, near: size / 2) })
        {
            let check = JSONLinesCheck(
                validation: validation, firstLine: firstLine, name: name, memoryBudget: budget / 2)
            async let first = OSThread.run(name: "jsonl-check") {
                check.run(input, range: 0..<middle, temporaryDirectory: temporaryDirectory)
            }
            let second = await OSThread.run(name: "jsonl-check") {
                check.run(input, range: middle..<size, temporaryDirectory: temporaryDirectory)
            }
            parts = [await first, second]
        } else {
            let check = JSONLinesCheck(validation: validation, firstLine: firstLine, name: name, memoryBudget: budget)
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
            throw LegacyAPNsError(
                .malformedInput,
                firstLine > 1
                    ? "\(name) holds no notifications from line \(firstLine) on" : "\(name) holds no notifications")
        }
        return JSONLinesInput(spools: parts.compactMap(\.spool), lines: lines, validation: validation)
    }

    /// The checked notifications for the binary protocol as the frames that will carry them, in
    /// input order, for `PushClient.send(frames:)` (a notification without an `id` has a nil
    /// identifier: reports name it by its line, ``LineIndex/line(of:)``). Only for an input
    /// opened with ``Validation/binary(encoder:format:)``. Read them once: a batch of records
    /// kept in memory is a view of its segment, freed when the send is done with it.
    public func frameBatches() -> FrameBatches { FrameBatches(parts: spools, validation: validation) }

    /// The spools' frame records one after the other, as batches.
    public struct FrameBatches: Sequence, Sendable {
        let parts: [SpoolFile]
        let validation: Validation

        /// An iterator over the batches.
        public func makeIterator() -> Iterator { Iterator(parts: parts, validation: validation) }

        /// The batches of one part after the other.
        public struct Iterator: IteratorProtocol {
            let parts: [SpoolFile]
            let format: FrameFormat
            let encoder: FrameEncoder
            var part = 0
            var current: SpoolFile.FrameBatches.Iterator?

            init(parts: [SpoolFile], validation: Validation) {
                self.parts = parts
                guard case .binary(let encoder, let format) = validation else {
                    preconditionFailure("frame batches of an input checked for HTTP/2")
                }
                (self.encoder, self.format) = (encoder, format)
                current = parts.first?.frameBatches(format: format, encoder: encoder).makeIterator()
            }

            /// The next batch, or nil after the last.
            public mutating func next() -> FrameBatch? {
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

    /// The checked requests for the HTTP/2 API, in input order (each with the push type and
    /// topic the check settled on). Only for an input opened with ``Validation/http2(topic:pushType:usesTokens:)``.
    public func requests() -> Records<ProviderRequest> {
        Records(parts: spools.map { $0.records() }) { $0.providerRequest }
    }

    /// The spools' records one after the other, as `Element`s.
    public struct Records<Element: Sendable>: Sequence, Sendable {
        let parts: [SpoolFile.Records]
        let convert: @Sendable (SpoolRecord.Decoded) -> Element

        /// An iterator over the records, read from the spool file in large pieces.
        public func makeIterator() -> Iterator { Iterator(base: parts.joined().makeIterator(), convert: convert) }

        /// The records of one part after the other.
        public struct Iterator: IteratorProtocol {
            var base: FlattenSequence<[SpoolFile.Records]>.Iterator
            let convert: @Sendable (SpoolRecord.Decoded) -> Element

            /// The next record, or nil after the last.
            public mutating func next() -> Element? { base.next().map(convert) }
        }
    }
}

extension JSONLinesInput {
    /// What a line must satisfy besides being well-formed JSON in the shape of a notification.
    public enum Validation: Sendable {
        /// Fit a binary frame of `format` under `encoder`'s limits.
        case binary(encoder: FrameEncoder, format: FrameFormat)
        /// Be a request the HTTP/2 API would not refuse (tokens of 32 bytes or more, a push type
        /// Apple documents, the push type's payload limit, its topic suffix and priority, ...), with
        /// these defaults applied: `topic` and `pushType` for lines without one (the push type is
        /// otherwise inferred from the payload), `usesTokens` for token authentication's rules.
        case http2(topic: String?, pushType: PushType?, usesTokens: Bool)

        var dialect: NotificationLineParser.Dialect {
            switch self {
            case .binary: .binary
            case .http2: .http2
            }
        }

        /// Throws the reason (without a line number) a checked line would be refused. For the
        /// HTTP/2 API, sets the push type the request goes out with (the line's, the default,
        /// or the one its payload implies), to be spooled with it: the send then neither looks
        /// at the payload again nor loses the default.
        ///
        /// A `liveactivity` line without a topic of its own gets the default topic with
        /// `.push-type.liveactivity` (when it lacks it), spooled with it.
        func check(_ line: inout NotificationLineParser.ParsedLine) throws {
            switch self {
            case .binary(let encoder, let format):
                try line.validate(encoder: encoder, format: format)
            case .http2(let topic, let pushType, let usesTokens):
                try ProviderRequest.checkToken(line.token)
                if let given = line.pushType, let problem = PushType.unknownTypeProblem(given, named: "pushType") {
                    throw LegacyAPNsError(.malformedInput, problem)
                }
                let type = line.pushType ?? pushType ?? .inferred(forJSON: line.payload)
                if type == .liveActivity, line.topic == nil { line.topic = PushType.liveActivityTopic(topic) }
                if let (_, explanation) = ProviderRequest.problem(
                    payloadCount: line.payload.count, pushType: type, priority: line.priority,
                    topic: line.topic ?? topic, collapseID: line.collapseID, usesTokens: usesTokens)
                {
                    throw LegacyAPNsError(.malformedInput, explanation)
                }
                if let (_, explanation) = type.problem(payloadJSON: line.payload) {
                    throw LegacyAPNsError(.malformedInput, explanation)
                }
                if type == .liveActivity, let problem = LiveActivityPayload.problem(inPayloadJSON: line.payload) {
                    throw LegacyAPNsError(.malformedInput, problem)
                }
                line.pushType = type
            }
        }
    }
}

/// Checks one part of a JSON Lines input and spools what it holds.
struct JSONLinesCheck: Sendable {
    typealias Validation = JSONLinesInput.Validation

    let validation: Validation
    /// Lines before this one are skipped unparsed.
    let firstLine: Int
    /// "'path'" or "stdin", for messages.
    let name: String
    /// Bytes of frame records the part may keep in memory (see ``SpoolFile``).
    var memoryBudget = 0

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
        /// Anything else: a ``LegacyAPNsError`` (`.fileError`: unreadable input, no room for the
        /// spool).
        case other(any Error & Sendable)

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
            spool = try SpoolFile(temporaryDirectory: temporaryDirectory, memoryBudget: memoryBudget)
        } catch {
            outcome.failure = .other(error)
            return outcome
        }
        var splitter = LineSplitter()
        var sink = LineSink(check: self, spool: spool)
        defer { sink.release() }
        do {
            try InputFile.forEachChunk(input, path: name, range: range) { chunk in
                try splitter.feed(chunk) { try sink.handle($0, number: $1) }
            }
            try splitter.finish { try sink.handle($0, number: $1) }
            try sink.flush()
            try spool.flush()
            outcome.lines = sink.lines
            outcome.spool = spool
        } catch let error as LegacyAPNsError {
            if let line = error.underlying as? NotificationLineParser.LineError {
                outcome.failure = .line(line)
            } else {
                outcome.failure = .other(error)
            }
        } catch {
            outcome.failure = .other(LegacyAPNsError(.fileError, "cannot read \(name): \(error)"))
        }
        outcome.lineCount = splitter.lineNumber
        return outcome
    }
}

/// What ``JSONLinesCheck`` does with each line: parse, validate and spool it. A value, so that the
/// per-line work touches no class properties and no captured variables (no exclusivity checks,
/// no reference counting), with a fast path for the common binary line: the fields of
/// ``NotificationLineParser/fastFields(_:)`` go straight into the frame record, without a
/// ``NotificationLineParser/ParsedLine``. Whatever the fast path does not take (another shape, a
/// payload over the limit) goes through the full parser, which also words every error.
struct LineSink {
    let check: JSONLinesCheck
    let spool: SpoolFile
    let parser: NotificationLineParser
    /// The binary format and payload limit when the fast path applies.
    let fastFormat: FrameFormat?
    let payloadLimit: Int
    /// Where frame records are written: the spool's current ``SpoolFile/Segment`` (`segment`), or
    /// a buffer of records for the file (owned), or nothing yet.
    private var buffer = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    private var segment: SpoolFile.Segment?
    /// Whether records still go to memory (once one goes to the file, every later one does).
    private var inMemory = true
    /// Bytes and records in `buffer`.
    private var used = 0
    private var count = 0
    /// The segment's batch ends so far (see ``SpoolFile/Segment/cuts``), and the last one's offset.
    private var cuts: [(end: Int, count: Int)] = []
    private var lastCut = 0
    /// Where each spooled notification is.
    private(set) var lines = LineIndex()

    init(check: JSONLinesCheck, spool: SpoolFile) {
        self.check = check
        self.spool = spool
        parser = NotificationLineParser(dialect: check.validation.dialect)
        if case .binary(let encoder, let format) = check.validation {
            fastFormat = format
            payloadLimit = Swift.min(encoder.maximumPayloadSize, Int(UInt16.max))
        } else {
            fastFormat = nil
            payloadLimit = 0
        }
    }

    /// Frees the buffer (after the last ``flush()``, or on failure).
    mutating func release() {
        if segment == nil { buffer.deallocate() }
        segment = nil
        buffer = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    }

    @inline(__always)
    mutating func handle(_ line: UnsafeRawBufferPointer, number: Int) throws {
        guard number >= check.firstLine else { return }
        // 64 hex digits make a 32-byte token, which every format takes.
        if let format = fastFormat, let fast = parser.fastFields(line), fast.payload.count <= payloadLimit,
            fast.payload.count > 0
        {
            let payload = UnsafeRawBufferPointer(rebasing: line[fast.payload])
            let size = FrameRecord.size(
                tokenCount: DeviceToken.standardByteCount, payloadCount: payload.count, format: format,
                hasExpiration: fast.expiration != nil, hasPriority: fast.priority != nil)
            try reserve(size)
            fast.token.withUnsafeBytes { token in
                _ = FrameRecord.write(
                    token: token, payload: payload, identifier: fast.identifier, expiration: fast.expiration,
                    priority: fast.priority, format: format, to: buffer.baseAddress! + used)
            }
            used += size
            count += 1
            if used - lastCut >= SpoolFile.batchSize { noteCut() }
            lines.append(line: number)
            return
        }
        try handleInFull(line, number: number)
    }

    /// The full parser's way, for every line the fast path does not take.
    private mutating func handleInFull(_ line: UnsafeRawBufferPointer, number: Int) throws {
        let validation = check.validation
        let spooled: Bool? = try parser.withParsedLine(line, lineNumber: number) { parsed in
            var checked = parsed
            do {
                try validation.check(&checked)
            } catch let error as LegacyAPNsError {
                throw NotificationLineParser.LineError(line: number, reason: error.reason).error
            }
            if case .binary(_, let format) = validation {
                let size = FrameRecord.size(
                    tokenCount: parsed.token.count, payloadCount: parsed.payload.count, format: format,
                    hasExpiration: parsed.expiration != nil, hasPriority: parsed.priority != nil)
                try reserve(size)
                parsed.token.withUnsafeBytes { token in
                    _ = FrameRecord.write(
                        token: token, payload: parsed.payload, identifier: parsed.givenIdentifier,
                        expiration: parsed.expiration, priority: parsed.priority, format: format,
                        to: buffer.baseAddress! + used)
                }
                used += size
                count += 1
                if used - lastCut >= SpoolFile.batchSize { noteCut() }
            } else {
                try spool.append(checked)
            }
            return true
        }
        if spooled == true { lines.append(line: number) }
    }

    /// Makes room for `size` more bytes: hands what is written over to the spool and goes on in
    /// a fresh segment, or, once the spool's memory budget is spent, in a buffer for the file.
    @inline(__always)
    private mutating func reserve(_ size: Int) throws {
        guard used + size > buffer.count else { return }
        try flush()
        if inMemory, size <= SpoolFile.Segment.size, let next = spool.newSegment() {
            segment = next
            buffer = next.bytes
            return
        }
        inMemory = false
        lastCut = .max  // the file's reader cuts its own batches
        if buffer.count < size {
            buffer.deallocate()
            buffer = UnsafeMutableRawBufferPointer.allocate(
                byteCount: Swift.max(size, SpoolFile.writeSize), alignment: 16)
        }
    }

    /// Notes the end of a batch in the segment.
    private mutating func noteCut() {
        cuts.append((used, count))
        lastCut = used
    }

    /// Hands the frame records written so far over to the spool: a segment is kept as it is, a
    /// file buffer is written.
    mutating func flush() throws {
        guard used > 0 else { return }
        if let segment {
            if lastCut < used { cuts.append((used, count)) }
            segment.cuts = cuts
            cuts.removeAll(keepingCapacity: true)
            lastCut = 0
            spool.keep(segment)
            self.segment = nil
            buffer = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        } else {
            try spool.write(UnsafeRawBufferPointer(rebasing: buffer[0..<used]))
        }
        used = 0
        count = 0
    }
}
