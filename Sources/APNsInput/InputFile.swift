import APNsCore
internal import APNsRuntime

/// Reading input files, with errors worded for people ("cannot read 'x.p12': No such file or
/// directory"), each a ``LegacyAPNsError`` with code `.fileError`: the descriptors, mappings and
/// reads of the JSON Lines input (``JSONLinesInput``), and whatever else the command line reads.
/// Descriptors are the platform's (`Int32`); the OS is reached through APNsRuntime's platform layer.
package enum InputFile {
    /// Opens `path` for reading, `-` meaning stdin.
    package static func openForReading(_ path: String) throws -> Int32 {
        if path == "-" { return 0 }
        let descriptor: Int32
        do {
            descriptor = try FileDescriptor.open(path, .reading)
        } catch {
            throw LegacyAPNsError(.fileError, "cannot read '\(path)': \(error)")
        }
        if FileDescriptor.kind(descriptor) == .directory {
            FileDescriptor.close(descriptor)
            throw LegacyAPNsError(.fileError, "cannot read '\(path)': it is a directory")
        }
        return descriptor
    }

    /// Reads the whole file (or stdin for `-`), refusing files over `limit` bytes.
    package static func read(_ path: String, limit: Int = 64 * 1024 * 1024) throws -> [UInt8] {
        let descriptor = try openForReading(path)
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        try forEachChunk(descriptor, path: path) { chunk in
            bytes.append(contentsOf: chunk)
            if bytes.count > limit { throw LegacyAPNsError(.fileError, "'\(path)' is larger than \(limit) bytes") }
        }
        return bytes
    }

    /// Calls `body` with successive chunks of the descriptor's contents until end of file.
    package static func forEachChunk(
        _ descriptor: Int32, path: String, chunkSize: Int = 256 * 1024, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count: Int
            do {
                count = try FileDescriptor.read(descriptor, into: buffer)
            } catch {
                throw LegacyAPNsError(.fileError, "cannot read '\(path)': \(error)")
            }
            if count == 0 { return }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }

    /// Closes a descriptor from ``openForReading(_:)`` (stdin stays open).
    package static func close(_ descriptor: Int32) {
        if descriptor > 2 { FileDescriptor.close(descriptor) }
    }

    /// Calls `body` with successive chunks of the bytes in `range` (nil: from the current
    /// position to the end).
    ///
    /// A regular file is mapped and handed out 1 MiB at a time where it lies in the page cache
    /// (no copy; ``forEachMappedChunk(_:path:range:_:)``), or else read with 1 MiB `pread`s into
    /// one buffer; a pipe or a terminal is read in chunks of the same size. Memory stays flat
    /// either way, and a file that ends before `range` does, or is truncated while it is read, is
    /// a clear error.
    package static func forEachChunk(
        _ descriptor: Int32, path: String, range: Range<Int>?, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        var range = range
        if range == nil, let size = regularFileSize(descriptor), let position = FileDescriptor.offset(descriptor),
            position <= size
        {
            range = position..<size
        }
        guard let range else { return try forEachChunk(descriptor, path: path, chunkSize: largeChunk, body) }
        if range.count >= largeChunk, try forEachMappedChunk(descriptor, path: path, range: range, body) { return }
        try forEachChunk(descriptor, path: path, range: range, chunkSize: largeChunk, body)
    }

    /// ``forEachChunk(_:path:range:_:)`` over read-only mappings of `range`, ``largeChunk`` at a
    /// time, each unmapped once `body` is done with it (so the file's pages never all count as
    /// the process's memory). Returns false, having read nothing, when the file cannot be mapped
    /// (read it another way then).
    ///
    /// A mapped file that another process truncates would kill the reader with SIGBUS at the
    /// first page past the new end: each mapping is guarded (`GuardedMapping`), so such a page
    /// reads as zeros instead, and the truncation is the error once the chunk is done (or if it made
    /// `body` fail; so does a file found shorter than `range` then or at the end, as the zeros
    /// past a new end in its last page come without a SIGBUS). The chunks handed out stay
    /// readable until `body` returns; their bytes past a truncation read as zeros.
    package static func forEachMappedChunk(
        _ descriptor: Int32, path: String, range: Range<Int>, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Bool {
        guard let size = regularFileSize(descriptor), size >= range.upperBound else { return false }
        func truncated() -> LegacyAPNsError {
            LegacyAPNsError(
                .fileError,
                "'\(path)' ended at byte \(regularFileSize(descriptor) ?? 0) while it was read, not at byte "
                    + "\(range.upperBound) (it was truncated or replaced meanwhile)")
        }
        var position = range.lowerBound
        while position < range.upperBound {
            let count = Swift.min(largeChunk, range.upperBound - position)
            let mapping: GuardedMapping
            do {
                mapping = try GuardedMapping(descriptor, range: position..<position + count)
            } catch {
                if position == range.lowerBound { return false }
                switch error {
                case .cannotMap(let error): throw LegacyAPNsError(.fileError, "cannot read '\(path)': \(error)")
                case .noGuardLeft:
                    throw LegacyAPNsError(.fileError, "cannot read '\(path)': no guard left for its mapping")
                }
            }
            do {
                try body(mapping.bytes)
            } catch {
                // The zeros past a new end within its last page came without a SIGBUS.
                if mapping.wasTruncated || regularFileSize(descriptor) ?? 0 < range.upperBound { throw truncated() }
                throw error
            }
            if mapping.wasTruncated { throw truncated() }
            position += count
        }
        if regularFileSize(descriptor) ?? 0 < range.upperBound { throw truncated() }
        return true
    }

    /// The read size for inputs: large enough that the system calls cost little against the
    /// scan, small enough to stay in the cache while it is scanned.
    package static let largeChunk = 1024 * 1024

    /// The size of the regular file open at `descriptor`, or nil for a pipe, a terminal, ...
    package static func regularFileSize(_ descriptor: Int32) -> Int? {
        FileDescriptor.regularFileSize(descriptor)
    }

    /// The offset of the first line that starts at or after `offset` in a regular file, or nil
    /// when no line starts there.
    package static func lineStart(in descriptor: Int32, near offset: Int) -> Int? {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var position = offset
        while true {
            let count = buffer.withUnsafeMutableBytes {
                (try? FileDescriptor.read(descriptor, into: $0, at: position)) ?? -1
            }
            guard count > 0 else { return nil }
            if let newline = buffer[0..<count].firstIndex(of: 0x0A) { return position + newline + 1 }
            position += count
        }
    }

    /// Calls `body` with successive chunks of the bytes in `range` (read with pread).
    package static func forEachChunk(
        _ descriptor: Int32, path: String, range: Range<Int>, chunkSize: Int = 256 * 1024,
        _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var position = range.lowerBound
        while position < range.upperBound {
            let count: Int
            do {
                count = try FileDescriptor.read(
                    descriptor,
                    into: UnsafeMutableRawBufferPointer(
                        rebasing: buffer[0..<Swift.min(chunkSize, range.upperBound - position)]),
                    at: position)
            } catch {
                throw LegacyAPNsError(.fileError, "cannot read '\(path)': \(error)")
            }
            if count == 0 {
                throw LegacyAPNsError(
                    .fileError,
                    "'\(path)' ended at byte \(position) while it was read, not at byte \(range.upperBound) "
                        + "(it was truncated or replaced meanwhile)")
            }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            position += count
        }
    }
}
