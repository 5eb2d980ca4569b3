internal import APNsRuntime
import LegacyAPNs

#if canImport(Glibc)
    import Glibc
#endif

/// An unlinked temporary file holding ``SpoolRecord``s: written once by the check, then read
/// back, in order, by the send. It owns its descriptor and closes it when it goes away.
final class SpoolFile: @unchecked Sendable {
    // @unchecked: written by one checking thread, then (after the check has finished) read by
    // one sending thread; never both at once.

    private let descriptor: Int32
    private var buffer: [UInt8] = []
    /// Records written.
    private(set) var count = 0

    /// Bytes buffered before a write.
    static let writeSize = 256 * 1024

    /// Creates the file in `$TMPDIR` (or /tmp) and unlinks it at once: nothing is left behind,
    /// whatever happens to the process.
    init(temporaryDirectory: String) throws {
        var template = Array((temporaryDirectory + "/legacy-push-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else {
            throw CLIError.usage("cannot create a temporary file in \(temporaryDirectory): \(errnoText())")
        }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        self.descriptor = descriptor
        buffer.reserveCapacity(Self.writeSize + 4096)
    }

    deinit { Glibc.close(descriptor) }

    /// Appends the record of a checked line.
    func append(_ line: NotificationLineParser.ParsedLine) throws {
        SpoolRecord.encode(line, into: &buffer)
        count += 1
        if buffer.count >= Self.writeSize { try flush() }
    }

    /// Writes what is buffered.
    func flush() throws {
        if let code = FileDescriptor.writeAll(buffer, to: descriptor) {
            throw CLIError.usage("cannot write the temporary spool: \(errnoText(code))")
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// The records from the start (call after the last ``flush()``).
    func records() -> Records { Records(file: self) }

    /// The spooled records, in order.
    struct Records: Sequence, Sendable {
        let file: SpoolFile

        func makeIterator() -> Iterator { Iterator(descriptor: file.descriptor) }

        /// Reads the file in large pieces and decodes record after record.
        struct Iterator: IteratorProtocol {
            let descriptor: Int32
            private var buffer = [UInt8](repeating: 0, count: SpoolFile.writeSize)
            private var start = 0
            private var end = 0
            private var offset: off_t = 0
            private var atEnd = false

            init(descriptor: Int32) { self.descriptor = descriptor }

            mutating func next() -> SpoolRecord.Decoded? { next(decoding: SpoolRecord.decode) }

            /// The next record as `decode` reads it (nil from `decode`: not a whole record yet).
            @inline(__always)
            mutating func next<Record>(decoding decode: (UnsafeRawBufferPointer) -> (Record, size: Int)?)
                -> Record?
            {
                while true {
                    let decoded = buffer.withUnsafeBytes { raw in
                        decode(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
                    }
                    if let (record, size) = decoded {
                        start += size
                        return record
                    }
                    if atEnd { return nil }
                    refill()
                }
            }

            private mutating func refill() {
                let remaining = end - start
                if start > 0 {
                    buffer.withUnsafeMutableBytes { raw in
                        raw.baseAddress!.copyMemory(from: raw.baseAddress! + start, byteCount: remaining)
                    }
                    (start, end) = (0, remaining)
                }
                let count = buffer.withUnsafeMutableBytes { raw in
                    pread(descriptor, raw.baseAddress! + end, raw.count - end, offset)
                }
                if count > 0 {
                    end += count
                    offset += off_t(count)
                } else if count == 0 || errno != EINTR {
                    atEnd = true
                }
            }
        }
    }
}
