internal import APNsRuntime
import LegacyAPNs

/// The checked notifications of one part of an input: ``SpoolRecord``s (for the HTTP/2 API) in an
/// unlinked temporary file, or ``FrameRecord``s, the frames the binary send writes
/// (``frameBatches(format:encoder:)``), first in memory, in ``Segment``s, up to a budget, then in
/// the file. Written once by the check, then read back, in order, by the send. It owns its
/// descriptor and closes it when it goes away.
///
/// Frame records in memory are the common case (an input of up to about 100,000 notifications per
/// 16 MiB of budget): the check encodes them where the send's batches then find them, so they
/// cross neither the kernel nor a second buffer, and a segment is freed once the send is done
/// with its last batch. Beyond the budget the file takes the rest, so memory stays flat for any
/// input size.
final class SpoolFile: @unchecked Sendable {
    // @unchecked: written by one checking thread, then (after the check has finished) read by
    // one sending thread; never both at once.

    private let descriptor: Int32
    /// The folder of the file (named in errors).
    private let directory: String
    /// ``SpoolRecord``s not yet written.
    private var buffer: [UInt8] = []
    /// Frame records kept in memory, before any in the file; handed over to the send (once).
    private var segments: [Segment] = []
    private var segmentsTaken = false
    /// Bytes of segments still allowed.
    private var memoryLeft: Int

    /// Bytes buffered before a write.
    static let writeSize = 256 * 1024

    /// Creates the file in `$TMPDIR` (or /tmp) and unlinks it at once: nothing is left behind,
    /// whatever happens to the process.
    /// `memoryBudget` bytes of frame records may be kept in memory (in whole ``Segment``s).
    ///
    /// - Throws: ``LegacyAPNsError`` (`.fileError`) naming the folder and why.
    init(temporaryDirectory: String, memoryBudget: Int = 0) throws {
        memoryLeft = memoryBudget
        directory = temporaryDirectory
        do {
            descriptor = try FileDescriptor.openUnlinkedTemporary(in: temporaryDirectory, prefix: "legacy-push-")
        } catch {
            throw LegacyAPNsError(
                .fileError,
                "cannot create the spool of the checked notifications, a temporary file in '\(temporaryDirectory)': "
                    + "\(error) (TMPDIR names another folder)")
        }
    }

    /// A write to the file failed: an I/O error (a full disk, a file size limit), not the input's.
    private func writeFailed(_ code: Int32) -> LegacyAPNsError {
        LegacyAPNsError(
            .fileError,
            "cannot write the spool of the checked notifications, a temporary file in '\(directory)': "
                + "\(SystemError(code: code)) (TMPDIR names a folder with more room)")
    }

    deinit { FileDescriptor.close(descriptor) }

    /// Appends the ``SpoolRecord`` of a checked line (the HTTP/2 send's records).
    func append(_ line: NotificationLineParser.ParsedLine) throws {
        SpoolRecord.encode(line, into: &buffer)
        if buffer.count >= Self.writeSize { try flush() }
    }

    /// Writes `bytes` (whole ``FrameRecord``s) to the file.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        if let code = FileDescriptor.writeAll(bytes, to: descriptor) {
            throw writeFailed(code)
        }
    }

    /// A fresh segment for frame records, or nil when the budget is spent (the rest go to the
    /// file, with ``write(_:)``). Segments must be kept (``keep(_:)``) in the order they were
    /// handed out, and before anything is written to the file.
    func newSegment() -> Segment? {
        guard memoryLeft >= Segment.size, let segment = Segment() else { return nil }
        memoryLeft -= Segment.size
        return segment
    }

    /// Keeps a filled segment, after those kept before it.
    func keep(_ segment: Segment) {
        if !segment.cuts.isEmpty { segments.append(segment) }
    }

    /// Frame records held in memory: ``Segment/size`` bytes, on huge pages where the system
    /// offers them (one page fault per segment instead of 512), filled by the check from the
    /// start, read by the send where they are.
    final class Segment: @unchecked Sendable {
        // @unchecked: filled by the checking thread before it is kept; read only afterwards.

        /// Bytes per segment (one huge page).
        static let size = 2 * 1024 * 1024

        let base: UnsafeMutableRawPointer
        /// Where the send's batches end: (byte offset, records before it), increasing, the last
        /// one at the end of the segment's whole records. Noted by the check as it writes, about
        /// every ``SpoolFile/batchSize`` bytes, so the send never walks the records.
        var cuts: [(end: Int, count: Int)] = []

        /// Nil when the memory cannot be had (the records then go to the file).
        init?() {
            // A fresh 4 KiB page costs about 3 µs to fault in here, a huge page about 0.5 µs per
            // 4 KiB: 29 MB of frames for 200,000 notifications cost ~22 ms or ~7 ms.
            guard let memory = Memory.allocateAligned(Self.size) else { return nil }
            base = memory
        }

        deinit { Memory.deallocateAligned(base) }

        /// The segment's bytes, for the check to write into.
        var bytes: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: base, count: Self.size) }
    }

    /// Writes what is buffered.
    func flush() throws {
        if let code = FileDescriptor.writeAll(buffer, to: descriptor) {
            throw writeFailed(code)
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
            private var offset = 0
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
                    (try? FileDescriptor.read(
                        descriptor, into: UnsafeMutableRawBufferPointer(rebasing: raw[end...]), at: offset)) ?? 0
                }
                if count > 0 {
                    end += count
                    offset += count
                } else {
                    atEnd = true
                }
            }
        }
    }
}

extension SpoolFile {
    /// The spooled ``FrameRecord``s from the start (call after the last ``flush()``), as batches of
    /// `format`: those in memory where they are, those in the file read straight into each
    /// batch's storage. Read them once.
    func frameBatches(format: FrameFormat, encoder: FrameEncoder) -> FrameBatches {
        FrameBatches(file: self, format: format, encoder: encoder)
    }

    /// Takes the segments, for the one send that reads them (so each is freed when that send is
    /// done with it).
    fileprivate func takeSegments() -> [Segment] {
        precondition(!segmentsTaken, "the spooled frames are read once")
        segmentsTaken = true
        defer { segments = [] }
        return segments
    }

    /// The spooled frame records as ``FrameBatch``es: read once.
    struct FrameBatches: Sequence, Sendable {
        let file: SpoolFile
        let format: FrameFormat
        let encoder: FrameEncoder

        func makeIterator() -> Iterator { Iterator(batches: self) }

        /// Batches of the segments' records where they are, then of the file's, read a batch at
        /// a time (a record cut by the end of one read starts the next batch).
        struct Iterator: IteratorProtocol {
            let batches: FrameBatches
            private var segments: [Segment?]
            /// The segment being cut into batches, and its next cut.
            private var segment = 0
            private var cut = 0
            private var offset = 0
            private var carry: [UInt8] = []
            private var atEnd = false

            init(batches: FrameBatches) {
                self.batches = batches
                segments = batches.file.takeSegments()
            }

            mutating func next() -> FrameBatch? {
                if segment < segments.count { return nextInMemory() }
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
                        let count =
                            (try? FileDescriptor.read(
                                descriptor, into: UnsafeMutableRawBufferPointer(rebasing: free[written...]), at: offset))
                            ?? 0
                        guard count > 0 else {
                            reachedEnd = true
                            break
                        }
                        written += count
                        offset += count
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

            /// About ``SpoolFile/batchSize`` bytes of whole records of the current segment, where
            /// they are; the iterator lets go of the segment with its last batch.
            private mutating func nextInMemory() -> FrameBatch {
                let current = segments[segment]!
                let (start, before) = cut > 0 ? current.cuts[cut - 1] : (0, 0)
                let (end, through) = current.cuts[cut]
                let batch = FrameBatch(
                    format: batches.format, encoder: batches.encoder,
                    records: UnsafeRawBufferPointer(start: current.base + start, count: end - start),
                    count: through - before, owner: current)
                cut += 1
                if cut == current.cuts.count {
                    segments[segment] = nil
                    segment += 1
                    cut = 0
                }
                return batch
            }
        }
    }

    /// Bytes of records per batch the send reads (about 400 notifications with 100-byte payloads).
    static let batchSize = 64 * 1024
}
