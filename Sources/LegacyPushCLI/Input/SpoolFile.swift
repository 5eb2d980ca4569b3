internal import APNsRuntime
import LegacyAPNs

#if canImport(Glibc)
    import Glibc
#endif

/// An unlinked temporary file holding the checked notifications: ``SpoolRecord``s (for the HTTP/2
/// API) or ``FrameRecord``s, the frames the binary send writes (``frameBatches(format:encoder:)``).
/// Written once by the check, then read back, in order, by the send. It owns its descriptor and
/// closes it when it goes away.
final class SpoolFile: @unchecked Sendable {
    // @unchecked: written by one checking thread, then (after the check has finished) read by
    // one sending thread; never both at once.

    private let descriptor: Int32
    /// ``SpoolRecord``s not yet written.
    private var buffer: [UInt8] = []

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
    }

    deinit { Glibc.close(descriptor) }

    /// Appends the ``SpoolRecord`` of a checked line (the HTTP/2 send's records).
    func append(_ line: NotificationLineParser.ParsedLine) throws {
        SpoolRecord.encode(line, into: &buffer)
        if buffer.count >= Self.writeSize { try flush() }
    }

    /// Writes `bytes` (whole ``FrameRecord``s) to the file.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        if let code = FileDescriptor.writeAll(bytes, to: descriptor) {
            throw CLIError.usage("cannot write the temporary spool: \(errnoText(code))")
        }
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

            mutating func next() -> SpoolRecord.Decoded? {
                while true {
                    let decoded = buffer.withUnsafeBytes { raw in
                        SpoolRecord.decode(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
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

extension SpoolFile {
    /// The spooled ``FrameRecord``s from the start (call after the last ``flush()``), as batches of
    /// `format` read straight from the file into each batch's storage.
    func frameBatches(format: FrameFormat, encoder: FrameEncoder) -> FrameBatches {
        FrameBatches(file: self, format: format, encoder: encoder)
    }

    /// The spooled frame records as ``FrameBatch``es.
    struct FrameBatches: Sequence, Sendable {
        let file: SpoolFile
        let format: FrameFormat
        let encoder: FrameEncoder

        func makeIterator() -> Iterator { Iterator(batches: self) }

        /// Reads the file a batch at a time; a record cut by the end of one read starts the next
        /// batch.
        struct Iterator: IteratorProtocol {
            let batches: FrameBatches
            private var offset: off_t = 0
            private var carry: [UInt8] = []
            private var atEnd = false

            init(batches: FrameBatches) { self.batches = batches }

            mutating func next() -> FrameBatch? {
                guard !atEnd else { return nil }
                var batch = FrameBatch(format: batches.format, encoder: batches.encoder, capacity: SpoolFile.batchSize)
                // Room for the record the carried bytes start, whatever its size.
                let needed = carry.withUnsafeBytes { bytes in
                    bytes.count >= FrameRecord.headerSize
                        ? FrameRecord.headerSize
                            + Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self)))
                        : 0
                }
                let descriptor = batches.file.descriptor
                var offset = self.offset
                var reachedEnd = false
                let carried = carry
                let rest = batch.fill(minimum: Swift.max(needed, SpoolFile.batchSize)) { free in
                    carried.withUnsafeBytes { bytes in
                        if let start = bytes.baseAddress, bytes.count > 0 {
                            free.baseAddress!.copyMemory(from: start, byteCount: bytes.count)
                        }
                    }
                    var written = carried.count
                    while written < free.count {
                        let count = pread(descriptor, free.baseAddress! + written, free.count - written, offset)
                        if count > 0 {
                            written += count
                            offset += off_t(count)
                        } else if count == 0 || errno != EINTR {
                            reachedEnd = true
                            break
                        }
                    }
                    return written
                }
                self.offset = offset
                carry = Array(rest)
                // The check wrote whole records and flushed them (a failed write fails the check),
                // so bytes of a record can only be left over at the end if the file was changed
                // behind the process's back; the send ends there, as a read error would end it.
                if reachedEnd { atEnd = true }
                return batch.isEmpty ? nil : batch
            }
        }
    }

    /// Bytes of records per batch the send reads (about 400 notifications with 100-byte payloads).
    static let batchSize = 64 * 1024
}
