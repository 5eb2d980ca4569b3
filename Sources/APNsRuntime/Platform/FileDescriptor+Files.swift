#if canImport(Glibc)
    import Glibc
#endif

extension FileDescriptor {
    /// How ``open(_:_:)`` opens a file (always close-on-exec).
    package struct OpenMode: Sendable {
        let flags: Int32
        let permissions: UInt32

        /// For reading.
        package static let reading = OpenMode(flags: O_RDONLY, permissions: 0)

        /// For appending, creating the file with `permissions` if need be; with `exclusive`, only a
        /// new file.
        package static func appending(permissions: UInt32, exclusive: Bool = false) -> OpenMode {
            OpenMode(flags: O_WRONLY | O_APPEND | O_CREAT | (exclusive ? O_EXCL : 0), permissions: permissions)
        }

        /// A new file for writing, with `permissions`: fails if anything (a link too) is there.
        package static func creatingNew(permissions: UInt32) -> OpenMode {
            OpenMode(flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, permissions: permissions)
        }

        /// For reading and writing, never becoming the controlling terminal (`/dev/tty`).
        package static let terminal = OpenMode(flags: O_RDWR | O_NOCTTY, permissions: 0)
    }

    /// Opens `path`; the descriptor, which the caller closes.
    package static func open(_ path: String, _ mode: OpenMode) throws(SystemError) -> Int32 {
        let descriptor = Glibc.open(path, mode.flags | O_CLOEXEC, mode_t(mode.permissions))
        guard descriptor >= 0 else { throw .last }
        return descriptor
    }

    /// Creates a file `<directory>/<prefix>XXXXXX` for reading and writing and removes its name
    /// at once: nothing is left behind, whatever happens to the process.
    package static func openUnlinkedTemporary(in directory: String, prefix: String) throws(SystemError) -> Int32 {
        var template = Array("\(directory)/\(prefix)XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw .last }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return descriptor
    }

    /// Closes `descriptor`.
    package static func close(_ descriptor: Int32) { _ = Glibc.close(descriptor) }

    /// Reads what is there, up to `buffer.count` bytes (0 at the end), retrying after signals.
    package static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError)
        -> Int
    {
        while true {
            let count = Glibc.read(descriptor, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if errno != EINTR { throw .last }
        }
    }

    /// Reads up to `buffer.count` bytes at `offset` (`pread`; 0 at the end), retrying after signals.
    package static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int)
        throws(SystemError) -> Int
    {
        while true {
            let count = pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset))
            if count >= 0 { return count }
            if errno != EINTR { throw .last }
        }
    }

    /// Writes what it can of `bytes` (at least one byte, or 0 when nothing could be written),
    /// retrying after signals.
    package static func write(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> Int {
        while true {
            let count = Glibc.write(descriptor, bytes.baseAddress, bytes.count)
            if count >= 0 { return count }
            if errno != EINTR { throw .last }
        }
    }

    /// Waits until what was written is on the disk (`fsync`).
    package static func sync(_ descriptor: Int32) throws(SystemError) {
        guard fsync(descriptor) == 0 else { throw .last }
    }

    /// Sets the file's permission bits (`fchmod`: exactly these, whatever the umask took away).
    package static func setPermissions(_ descriptor: Int32, _ permissions: UInt32) throws(SystemError) {
        guard fchmod(descriptor, mode_t(permissions)) == 0 else { throw .last }
    }

    /// Cuts the file to `size` bytes.
    package static func truncate(_ descriptor: Int32, to size: Int) throws(SystemError) {
        guard ftruncate(descriptor, off_t(size)) == 0 else { throw .last }
    }

    /// The current offset, or nil (a pipe).
    package static func offset(_ descriptor: Int32) -> Int? {
        let offset = lseek(descriptor, 0, SEEK_CUR)
        return offset >= 0 ? Int(offset) : nil
    }

    /// Moves to the end of the file; the new offset, or nil.
    package static func seekToEnd(_ descriptor: Int32) -> Int? {
        let offset = lseek(descriptor, 0, SEEK_END)
        return offset >= 0 ? Int(offset) : nil
    }

    /// What the descriptor refers to, or nil when it cannot be told.
    package static func kind(_ descriptor: Int32) -> FileSystem.Kind? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return FileSystem.Kind(mode: info.st_mode)
    }

    /// The size of the regular file open at `descriptor`, or nil for a pipe, a terminal, ...
    package static func regularFileSize(_ descriptor: Int32) -> Int? {
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int(info.st_size)
    }

    /// Whether `descriptor` is a terminal.
    package static func isTerminal(_ descriptor: Int32) -> Bool { isatty(descriptor) == 1 }

    /// A pipe's two ends, close-on-exec, each non-blocking as asked; nil when there are no
    /// descriptors left.
    package static func makePipe(nonBlockingRead: Bool = true, nonBlockingWrite: Bool = true) -> (
        read: Int32, write: Int32
    )? {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        for (end, nonBlocking) in [(ends[0], nonBlockingRead), (ends[1], nonBlockingWrite)] {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            if nonBlocking { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) }
        }
        return (ends[0], ends[1])
    }
}
