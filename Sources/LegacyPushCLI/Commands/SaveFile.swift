internal import APNsRuntime
import CommandLineKit
import FeedbackClient
import LegacyAPNs
import Synchronization

/// `feedback --save PATH` (and the file of tuples that could not be printed): an append-only
/// evidence file of raw feedback tuples. Every batch is written and synced to disk before the
/// tuples are printed.
///
/// The file always ends on a tuple boundary: when a write comes up short (a full disk, a file
/// size limit) the file is truncated back to the last whole tuple that reached it, and nothing
/// more is appended. ``savedTupleCount`` says how many of the tuples handed to ``append(_:)``
/// are in the file, so the caller knows which ones still need a home.
final class SaveFile: @unchecked Sendable {
    // @unchecked: the descriptor never changes after init; `append` is called by one connection
    // thread at a time (reads are sequential), and the mutable state is guarded by a mutex.
    let path: String
    private let descriptor: Int32

    private struct State {
        var failure: LegacyAPNsError?
        var savedTupleCount = 0
    }

    private let state = Mutex(State())

    /// Opens (or creates, mode 0600) `path` for appending; with `exclusive`, only a new file.
    init(path: String, exclusive: Bool = false, option: String = "--save") throws {
        self.path = path
        let existed = FileSystem.kind(of: path) != nil
        let descriptor: Int32
        do {
            descriptor = try FileDescriptor.open(path, .appending(permissions: 0o600, exclusive: exclusive))
        } catch {
            throw LegacyAPNsError(.fileError, "cannot open '\(path)' for \(option): \(error)")
        }
        // The umask can only take bits away from 0600; make a new file exactly 0600 anyway.
        if !existed { try? FileDescriptor.setPermissions(descriptor, 0o600) }
        self.descriptor = descriptor
    }

    deinit { FileDescriptor.close(descriptor) }

    /// The first write or sync failure, if any (its reason says where the file now ends).
    var failure: LegacyAPNsError? { state.withLock { $0.failure } }

    /// Tuples appended by this process that are in the file (every one handed to ``append(_:)``
    /// until the first failure; after it, those before the failure that reached the disk whole).
    var savedTupleCount: Int { state.withLock { $0.savedTupleCount } }

    /// The raw sink for the reader.
    var sink: FeedbackReader.RawSink { { [self] bytes in try bytes.withUnsafeBytes { try self.append($0) } } }

    /// Appends `bytes` (whole tuples) and syncs them to disk. After a failure, refuses every
    /// later append with the same error, so the file never has a gap in the middle.
    func append(_ bytes: UnsafeRawBufferPointer) throws {
        if let failure { throw failure }
        let start = FileDescriptor.seekToEnd(descriptor)
        var written = 0
        var failure: SystemError?
        while written < bytes.count {
            do {
                let count = try FileDescriptor.write(descriptor, UnsafeRawBufferPointer(rebasing: bytes[written...]))
                if count == 0 {
                    failure = .inputOutput
                    break
                }
                written += count
            } catch {
                failure = error
                break
            }
        }
        if failure == nil {
            do { try FileDescriptor.sync(descriptor) } catch {
                // What reached the disk is unknown: keep only what was there before this batch.
                throw fail(keeping: 0, of: bytes, start: start, "cannot sync '\(path)' to disk: \(error)")
            }
        }
        if let failure {
            let boundary = Self.wholeTuples(in: bytes, upTo: written)
            throw fail(keeping: boundary.bytes, of: bytes, start: start, "cannot write '\(path)': \(failure)")
        }
        let tuples = Self.wholeTuples(in: bytes, upTo: bytes.count).count
        state.withLock { $0.savedTupleCount += tuples }
    }

    /// Encodes `records` and appends them.
    func append(_ records: [FeedbackRecord]) throws {
        var writer = ByteWriter(capacity: records.reduce(0) { $0 + $1.encodedByteCount })
        for record in records { record.encode(into: &writer) }
        try writer.bytes.withUnsafeBytes { try append($0) }
    }

    /// Truncates the file back to the last whole tuple of this batch that reached it, records the
    /// failure, and returns it.
    private func fail(keeping kept: Int, of bytes: UnsafeRawBufferPointer, start: Int?, _ reason: String)
        -> LegacyAPNsError
    {
        var kept = kept
        do {
            guard let start else { throw SystemError.inputOutput }
            try FileDescriptor.truncate(descriptor, to: start + kept)
            try FileDescriptor.sync(descriptor)
        } catch {
            kept = 0  // cannot vouch for any of this batch
        }
        let tuples = Self.wholeTuples(in: bytes, upTo: kept).count
        return state.withLock { state in
            state.savedTupleCount += tuples
            let error = LegacyAPNsError(
                .fileError,
                "\(reason); it ends at the last whole tuple, \(state.savedTupleCount) tuple"
                    + "\(state.savedTupleCount == 1 ? "" : "s") saved by this run")
            state.failure = error
            return error
        }
    }

    /// How many whole tuples (and their bytes) the first `limit` bytes of `bytes` hold.
    static func wholeTuples(in bytes: UnsafeRawBufferPointer, upTo limit: Int) -> (count: Int, bytes: Int) {
        var offset = 0
        var count = 0
        while offset + FeedbackDecoder.headerByteCount <= limit {
            let length = Int(bytes[offset + 4]) << 8 | Int(bytes[offset + 5])
            let end = offset + FeedbackDecoder.headerByteCount + length
            guard end <= limit else { break }
            offset = end
            count += 1
        }
        return (count, offset)
    }
}
