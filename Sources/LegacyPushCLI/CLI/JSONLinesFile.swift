internal import APNsRuntime
import LegacyAPNs

#if canImport(Glibc)
    import Glibc
#endif

/// `send --input`: JSON Lines from a file or stdin, in two passes with flat memory.
///
/// Pass 1 parses and validates every line, so a malformed line is reported with its number before
/// anything is sent, and writes each notification as a compact binary record to an unlinked
/// temporary spool file. Pass 2 streams the spool to the client: no JSON is parsed twice, what is
/// sent is exactly what was checked (even if the input file changes meanwhile), and stdin works
/// like a file.
struct JSONLinesFile: Sendable {
    /// The spools (unlinked temporary files), read in order.
    let descriptors: [Int32]
    /// Notifications found in pass 1.
    let count: Int

    /// Reads, validates and spools the input (`-` is stdin). A large regular file is checked in two
    /// halves on two threads.
    static func open(_ path: String, encoder: FrameEncoder, format: FrameFormat) throws -> JSONLinesFile {
        let input = try Files.openForReading(path)
        defer { Files.close(input) }
        let name = path == "-" ? "stdin" : path
        var info = stat()
        let size = fstat(input, &info) == 0 && info.st_mode & S_IFMT == S_IFREG ? Int(info.st_size) : -1
        var ranges: [Range<Int>?] = [nil]  // nil: read sequentially to the end
        if size >= 8 * 1024 * 1024, let middle = lineStart(in: input, near: size / 2, size: size) {
            ranges = [0..<middle, middle..<size]
        }
        let parts = Slots<Part>(count: ranges.count)
        for (index, range) in ranges.enumerated() {
            let work: @Sendable () -> Void = {
                parts.fill(index, with: Part.check(input, range: range, name: name, encoder: encoder, format: format))
            }
            if index == ranges.count - 1 { work() } else { OSThread.start(name: "jsonl-check", work) }
        }
        let results = parts.waitForAll()
        defer { for result in results where result.failure != nil { Glibc.close(result.spool) } }
        // Report the first bad line, numbered from the start of the whole input.
        var linesBefore = 0
        for result in results {
            if let failure = result.failure {
                for other in results where other.failure == nil { Glibc.close(other.spool) }
                throw failure.error(linesBefore: linesBefore, encoder: encoder, format: format)
            }
            linesBefore += result.lines
        }
        let count = results.reduce(0) { $0 + $1.count }
        guard count > 0 else {
            for result in results { Glibc.close(result.spool) }
            throw CLIError.usage("\(path == "-" ? "stdin" : "'\(path)'") holds no notifications")
        }
        for result in results { _ = lseek(result.spool, 0, SEEK_SET) }
        return JSONLinesFile(descriptors: results.map { $0.spool }, count: count)
    }

    func close() {
        for descriptor in descriptors { Glibc.close(descriptor) }
    }

    /// Pass 2: the spooled notifications, in input order.
    func notifications() -> SpoolReader { SpoolReader(descriptors: descriptors) }

    /// The offset of the first line that starts at or after `offset`.
    private static func lineStart(in descriptor: Int32, near offset: Int, size: Int) -> Int? {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var position = offset
        while position < size {
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(position)) }
            guard count > 0 else { return nil }
            if let newline = buffer[0..<count].firstIndex(of: 0x0A) { return position + newline + 1 }
            position += count
        }
        return nil
    }

    /// One range of the input, checked and spooled by one thread.
    struct Part: Sendable {
        var spool: Int32
        var count = 0
        var lines = 0
        var failure: Failure?

        /// A bad line: re-parsed at the end to word the error with its global line number.
        struct Failure: Sendable {
            var localLine: Int
            var line: [UInt8]?
            var other: CLIError?

            func error(linesBefore: Int, encoder: FrameEncoder, format: FrameFormat) -> any Error {
                if let other { return other }
                do {
                    _ = try line!.withUnsafeBytes { raw in
                        try JSONLinesFile.checkLine(
                            raw, number: linesBefore + localLine, encoder: encoder, format: format
                        ) { _ in }
                    }
                } catch {
                    return error
                }
                return CLIError.usage("line \(linesBefore + localLine) is invalid")
            }
        }

        static func check(
            _ input: Int32, range: Range<Int>?, name: String, encoder: FrameEncoder, format: FrameFormat
        ) -> Part {
            let spool: Int32
            do {
                spool = try temporarySpool()
            } catch {
                return Part(spool: -1, failure: Failure(localLine: 0, other: error as? CLIError))
            }
            var part = Part(spool: spool)
            var splitter = LineSplitter()
            var records = SpoolWriter(descriptor: spool)
            var badLine: (Int, [UInt8])?
            let handle = { (line: UnsafeRawBufferPointer, number: Int) throws in
                do {
                    if try checkLine(line, number: number, encoder: encoder, format: format, { try records.append($0) })
                    {
                        part.count += 1
                    }
                } catch {
                    badLine = (number, Array(line))
                    throw error
                }
            }
            do {
                if let range {
                    try Files.forEachChunk(input, path: name, range: range) { try splitter.feed($0, handle) }
                } else {
                    try Files.forEachChunk(input, path: name) { try splitter.feed($0, handle) }
                }
                try splitter.finish(handle)
                try records.flush()
            } catch let error as CLIError {
                part.failure = Failure(localLine: 0, other: error)
            } catch {
                if let (number, line) = badLine { part.failure = Failure(localLine: number, line: line) }
            }
            part.lines = splitter.lineNumber
            return part
        }
    }

    /// Parses and validates one line; `spool` gets it when it holds a notification. Returns
    /// whether it did.
    static func checkLine(
        _ line: UnsafeRawBufferPointer, number: Int, encoder: FrameEncoder, format: FrameFormat,
        _ spool: (NotificationLineParser.ParsedLine) throws -> Void
    ) throws -> Bool {
        let spooled = try NotificationLineParser().withParsedLine(line, lineNumber: number) { parsed in
            do {
                try parsed.validate(encoder: encoder, format: format)
            } catch let error as LegacyAPNsError {
                throw LegacyAPNsError(.malformedInput, "line \(number): \(error.reason)")
            }
            try spool(parsed)
            return true
        }
        return spooled == true
    }

    private static func temporarySpool() throws -> Int32 {
        let directory = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array((directory + "/legacy-push-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else {
            throw CLIError.usage("cannot create a temporary file in \(directory): \(Files.errnoDescription())")
        }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return descriptor
    }
}

/// The spool's record: `flags (1) | token length (1) | payload length (2) | identifier (4) |
/// expiry (4) | priority (1) | token | payload`, native byte order (it never leaves this process).
/// Flags: bit 0 expiry present, bit 1 priority present.
private let recordHeaderSize = 13

/// Buffers records and writes them in large pieces.
struct SpoolWriter {
    let descriptor: Int32
    private var buffer: [UInt8] = []

    init(descriptor: Int32) {
        self.descriptor = descriptor
        buffer.reserveCapacity(512 * 1024)
    }

    mutating func append(_ line: NotificationLineParser.ParsedLine) throws {
        var header = [UInt8](repeating: 0, count: recordHeaderSize)
        header[0] = (line.expiration != nil ? 1 : 0) | (line.priority != nil ? 2 : 0)
        header[1] = UInt8(line.token.count)
        header.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt16(line.payload.count), toByteOffset: 2, as: UInt16.self)
            raw.storeBytes(of: line.identifier, toByteOffset: 4, as: UInt32.self)
            raw.storeBytes(of: line.expiration?.rawValue ?? 0, toByteOffset: 8, as: UInt32.self)
            raw.storeBytes(of: line.priority?.rawValue ?? 0, toByteOffset: 12, as: UInt8.self)
        }
        buffer.append(contentsOf: header)
        line.token.withUnsafeBytes { buffer.append(contentsOf: $0) }
        buffer.append(contentsOf: line.payload)
        if buffer.count >= 256 * 1024 { try flush() }
    }

    mutating func flush() throws {
        if let code = FileDescriptor.writeAll(buffer, to: descriptor) {
            throw CLIError.usage("cannot write the temporary spool: \(errnoText(code))")
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Streams the spooled notifications back, spool after spool.
struct SpoolReader: Sequence, Sendable {
    let descriptors: [Int32]

    func makeIterator() -> Iterator { Iterator(descriptors: descriptors) }

    struct Iterator: IteratorProtocol {
        var descriptors: [Int32]
        var descriptor: Int32
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var start = 0
        var end = 0
        var atEnd = false

        init(descriptors: [Int32]) {
            self.descriptors = Array(descriptors.dropFirst())
            self.descriptor = descriptors.first ?? -1
        }

        mutating func next() -> PushNotification? {
            while true {
                if let notification = decode() { return notification }
                if atEnd {
                    guard !descriptors.isEmpty else { return nil }
                    descriptor = descriptors.removeFirst()
                    atEnd = false
                    continue
                }
                refill()
            }
        }

        private mutating func decode() -> PushNotification? {
            guard end - start >= recordHeaderSize else { return nil }
            let start = self.start
            return buffer.withUnsafeBytes { raw -> PushNotification? in
                let flags = raw[start]
                let tokenLength = Int(raw[start + 1])
                let payloadLength = Int(raw.loadUnaligned(fromByteOffset: start + 2, as: UInt16.self))
                let total = recordHeaderSize + tokenLength + payloadLength
                guard end - start >= total else { return nil }
                let tokenStart = start + recordHeaderSize
                let notification = PushNotification(
                    token: DeviceToken(
                        validatedBytes: UnsafeRawBufferPointer(rebasing: raw[tokenStart..<(tokenStart + tokenLength)])),
                    payload: Payload(unvalidatedBytes: Array(raw[(tokenStart + tokenLength)..<(start + total)])),
                    identifier: raw.loadUnaligned(fromByteOffset: start + 4, as: UInt32.self),
                    expiration: flags & 1 != 0
                        ? Expiration(rawValue: raw.loadUnaligned(fromByteOffset: start + 8, as: UInt32.self)) : nil,
                    priority: flags & 2 != 0 ? Priority(rawValue: raw[start + 12]) : nil)
                self.start = start + total
                return notification
            }
        }

        private mutating func refill() {
            if start > 0 {
                let remaining = end - start
                buffer.withUnsafeMutableBytes { raw in
                    raw.baseAddress!.copyMemory(from: raw.baseAddress! + start, byteCount: remaining)
                }
                end = remaining
                start = 0
            }
            let count = buffer.withUnsafeMutableBytes { raw in
                read(descriptor, raw.baseAddress! + end, raw.count - end)
            }
            if count > 0 {
                end += count
            } else if count == 0 || errno != EINTR {
                atEnd = true
            }
        }
    }
}

/// Splits chunks into lines (without the newline), numbering them from 1; a partial last line is
/// carried over to the next chunk.
struct LineSplitter {
    private var carry: [UInt8] = []
    private(set) var lineNumber = 0

    mutating func feed(_ chunk: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer, Int) throws -> Void) throws {
        var start = 0
        while start < chunk.count,
            let found = memchr(chunk.baseAddress! + start, 0x0A, chunk.count - start)
        {
            let index = chunk.baseAddress!.distance(to: UnsafeRawPointer(found))
            lineNumber += 1
            if carry.isEmpty {
                try body(UnsafeRawBufferPointer(rebasing: chunk[start..<index]), lineNumber)
            } else {
                carry.append(contentsOf: chunk[start..<index])
                try carry.withUnsafeBytes { try body($0, lineNumber) }
                carry.removeAll(keepingCapacity: true)
            }
            start = index + 1
        }
        carry.append(contentsOf: chunk[start..<chunk.count])
    }

    mutating func finish(_ body: (UnsafeRawBufferPointer, Int) throws -> Void) throws {
        guard !carry.isEmpty else { return }
        lineNumber += 1
        try carry.withUnsafeBytes { try body($0, lineNumber) }
        carry.removeAll()
    }
}

/// Results filled in by several threads, waited for together.
final class Slots<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `values` is only touched under `lock`.
    private let lock = ConditionLock()
    private var values: [Value?]

    init(count: Int) { values = Array(repeating: nil, count: count) }

    func fill(_ index: Int, with value: Value) {
        lock.withLock {
            values[index] = value
            lock.broadcast()
        }
    }

    func waitForAll() -> [Value] {
        lock.withLock {
            while values.contains(where: { $0 == nil }) { _ = lock.wait(timeout: 0.05) }
            return values.map { $0! }
        }
    }
}
