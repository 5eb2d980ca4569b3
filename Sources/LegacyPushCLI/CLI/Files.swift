internal import APNsRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// File access for the CLI, with errors worded for people ("cannot read 'x.p12': No such file or
/// directory") and exit status 2. The library itself takes bytes, never paths.
enum Files {
    /// Opens `path` for reading, `-` meaning stdin.
    static func openForReading(_ path: String) throws -> Int32 {
        if path == "-" { return 0 }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw CLIError.usage("cannot read '\(path)': \(errnoDescription())") }
        var info = stat()
        if fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
            Glibc.close(descriptor)
            throw CLIError.usage("cannot read '\(path)': it is a directory")
        }
        return descriptor
    }

    /// Opens (creating if need be) `path` for appending, as `--record` does: 0644, close-on-exec.
    static func openForAppending(_ path: String) throws -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw CLIError.usage("cannot write '\(path)': \(errnoDescription())") }
        return descriptor
    }

    /// Reads the whole file (or stdin for `-`), refusing files over `limit` bytes.
    static func read(_ path: String, limit: Int = 64 * 1024 * 1024) throws -> [UInt8] {
        let descriptor = try openForReading(path)
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        try forEachChunk(descriptor, path: path) { chunk in
            bytes.append(contentsOf: chunk)
            if bytes.count > limit { throw CLIError.usage("'\(path)' is larger than \(limit) bytes") }
        }
        return bytes
    }

    /// Calls `body` with successive chunks of the descriptor's contents until end of file.
    static func forEachChunk(
        _ descriptor: Int32, path: String, chunkSize: Int = 256 * 1024, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = Glibc.read(descriptor, buffer.baseAddress, chunkSize)
            if count < 0 {
                if errno == EINTR { continue }
                throw CLIError.usage("cannot read '\(path)': \(errnoDescription())")
            }
            if count == 0 { return }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }

    /// Closes a descriptor from ``openForReading(_:)`` (stdin stays open).
    static func close(_ descriptor: Int32) {
        if descriptor > 2 { _ = Glibc.close(descriptor) }
    }

    /// Calls `body` with successive chunks of the bytes in `range` (nil: from the current
    /// position to the end).
    ///
    /// A regular file is read with 1 MiB `pread`s into one buffer (memory stays flat); a pipe or
    /// a terminal is read in chunks of the same size. Not `mmap`: a mapped file that another
    /// process truncates meanwhile kills the reader with SIGBUS, where a read just comes up short
    /// (and a file that ends before `range` does is a clear error).
    static func forEachChunk(
        _ descriptor: Int32, path: String, range: Range<Int>?, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        var range = range
        if range == nil, let size = regularFileSize(descriptor) {
            let position = Int(lseek(descriptor, 0, SEEK_CUR))
            if position >= 0, position <= size { range = position..<size }
        }
        guard let range else { return try forEachChunk(descriptor, path: path, chunkSize: largeChunk, body) }
        try forEachChunk(descriptor, path: path, range: range, chunkSize: largeChunk, body)
    }

    /// The read size for inputs: large enough that the system calls cost little against the
    /// scan, small enough to stay in the cache while it is scanned.
    static let largeChunk = 1024 * 1024

    /// The size of the regular file open at `descriptor`, or nil for a pipe, a terminal, ...
    static func regularFileSize(_ descriptor: Int32) -> Int? {
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int(info.st_size)
    }

    /// The offset of the first line that starts at or after `offset` in a regular file, or nil
    /// when no line starts there.
    static func lineStart(in descriptor: Int32, near offset: Int) -> Int? {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var position = offset
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(position)) }
            guard count > 0 else { return nil }
            if let newline = buffer[0..<count].firstIndex(of: 0x0A) { return position + newline + 1 }
            position += count
        }
    }

    /// Calls `body` with successive chunks of the bytes in `range` (read with pread).
    static func forEachChunk(
        _ descriptor: Int32, path: String, range: Range<Int>, chunkSize: Int = 256 * 1024,
        _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var position = range.lowerBound
        while position < range.upperBound {
            let count = pread(
                descriptor, buffer.baseAddress, Swift.min(chunkSize, range.upperBound - position), off_t(position))
            if count < 0 {
                if errno == EINTR { continue }
                throw CLIError.usage("cannot read '\(path)': \(errnoDescription())")
            }
            if count == 0 {
                throw CLIError.usage(
                    "'\(path)' ended at byte \(position) while it was read, not at byte \(range.upperBound) "
                        + "(it was truncated or replaced meanwhile)")
            }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            position += count
        }
    }

    /// Where temporary files go: `$TMPDIR`, else /tmp.
    static var temporaryDirectory: String {
        getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    static func errnoDescription() -> String {
        String(cString: strerror(errno))
    }
}
