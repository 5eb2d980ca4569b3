import LegacyAPNs

#if canImport(Glibc)
    import Glibc
#endif

/// `send --input`: JSON Lines from a file or stdin, streamed in two passes.
///
/// Pass 1 validates every line (and, for stdin, spools it to an unlinked temporary file), so a
/// malformed line is reported with its number before anything is sent. Pass 2 streams the
/// notifications to the client. Memory stays flat however long the input.
struct JSONLinesFile: Sendable {
    let descriptor: Int32
    let path: String
    /// Notifications found in pass 1.
    let count: Int

    /// Opens and validates the input (`-` is stdin).
    static func open(_ path: String, encoder: FrameEncoder, format: FrameFormat) throws -> JSONLinesFile {
        let input = try Files.openForReading(path)
        var spool: Int32 = -1
        if path == "-" {
            spool = try temporarySpool()
        }
        defer { if path != "-" { _ = lseek(input, 0, SEEK_SET) } }
        var count = 0
        let parser = NotificationLineParser()
        var splitter = LineSplitter()
        do {
            try Files.forEachChunk(input, path: path == "-" ? "stdin" : path) { chunk in
                if spool >= 0 { try write(chunk, to: spool) }
                try splitter.feed(chunk) { line, number in
                    guard let notification = try parser.parse(line, lineNumber: number) else { return }
                    do {
                        try encoder.validate(notification, format: format)
                    } catch let error as LegacyAPNsError {
                        throw LegacyAPNsError(.malformedInput, "line \(number): \(error.reason)")
                    }
                    count += 1
                }
            }
            try splitter.finish { line, number in
                guard let notification = try parser.parse(line, lineNumber: number) else { return }
                try encoder.validate(notification, format: format)
                count += 1
            }
        } catch {
            if spool >= 0 { Glibc.close(spool) }
            Files.close(input)
            throw error
        }
        guard count > 0 else {
            if spool >= 0 { Glibc.close(spool) }
            Files.close(input)
            throw CLIError.usage("\(path == "-" ? "stdin" : "'\(path)'") holds no notifications")
        }
        if spool >= 0 {
            _ = lseek(spool, 0, SEEK_SET)
            return JSONLinesFile(descriptor: spool, path: "stdin", count: count)
        }
        return JSONLinesFile(descriptor: input, path: path, count: count)
    }

    func close() {
        Files.close(descriptor)
    }

    /// Pass 2: the notifications, streamed. If the file changed since pass 1 and a line no longer
    /// parses, the sequence ends there and ``Notifications/failure`` says why.
    func notifications() -> Notifications {
        Notifications(descriptor: descriptor, failure: FailureBox())
    }

    struct Notifications: Sequence, Sendable {
        let descriptor: Int32
        let failure: FailureBox

        func makeIterator() -> Iterator { Iterator(descriptor: descriptor, failure: failure) }

        struct Iterator: IteratorProtocol {
            let descriptor: Int32
            let failure: FailureBox
            var buffer = [UInt8](repeating: 0, count: 256 * 1024)
            var start = 0
            var end = 0
            var lineNumber = 0
            var atEnd = false
            let parser = NotificationLineParser()

            init(descriptor: Int32, failure: FailureBox) {
                self.descriptor = descriptor
                self.failure = failure
            }

            mutating func next() -> PushNotification? {
                while true {
                    if let newline = buffer[start..<end].firstIndex(of: 0x0A) {
                        let lineStart = start
                        start = newline + 1
                        if let notification = parse(lineStart, newline) { return notification }
                        if failure.error != nil { return nil }
                        continue
                    }
                    if atEnd {
                        guard start < end else { return nil }
                        let lineStart = start
                        start = end
                        return parse(lineStart, end)
                    }
                    refill()
                }
            }

            private mutating func parse(_ from: Int, _ to: Int) -> PushNotification? {
                lineNumber += 1
                let number = lineNumber
                do {
                    return try buffer.withUnsafeBytes { raw in
                        try parser.parse(UnsafeRawBufferPointer(rebasing: raw[from..<to]), lineNumber: number)
                    }
                } catch {
                    failure.error = LegacyAPNsError(
                        .malformedInput,
                        "the input changed while sending: \((error as? LegacyAPNsError)?.reason ?? "\(error)")")
                    atEnd = true
                    start = end
                    return nil
                }
            }

            private mutating func refill() {
                if start > 0 {
                    buffer.withUnsafeMutableBytes { raw in
                        raw.baseAddress!.copyMemory(from: raw.baseAddress! + start, byteCount: end - start)
                    }
                    end -= start
                    start = 0
                }
                if end == buffer.count { buffer.append(contentsOf: repeatElement(0, count: buffer.count)) }
                let count = buffer.withUnsafeMutableBytes { raw in
                    Glibc.read(descriptor, raw.baseAddress! + end, raw.count - end)
                }
                if count <= 0 {
                    if count < 0, errno == EINTR { return }
                    atEnd = true
                } else {
                    end += count
                }
            }
        }
    }

    /// Where pass 2 leaves an error (read after the send).
    final class FailureBox: @unchecked Sendable {
        // @unchecked: written by the sending task's iterator, read after the send completed.
        var error: LegacyAPNsError?
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

    private static func write(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) throws {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw CLIError.usage("cannot spool stdin: \(Files.errnoDescription())")
            }
            offset += written
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
        var index = 0
        while index < chunk.count {
            if chunk[index] == 0x0A {
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
            index += 1
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
