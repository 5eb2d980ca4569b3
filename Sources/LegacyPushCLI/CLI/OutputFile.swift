internal import APNsRuntime
import LegacyAPNs

#if canImport(Glibc)
    import Glibc
#endif

/// Writes output files safely: never over an existing file unless asked, never a moment where a
/// private key is readable by others, never a half-written file under the final name.
///
/// The bytes go to a new temporary file in the same directory, created with its final mode
/// (`O_CREAT | O_EXCL`), then that file is moved into place: with `link` (fails if the name
/// exists) or, when overwriting, `rename` (atomic replace).
enum OutputFile {
    /// Mode for files holding a private key.
    static let privateMode: mode_t = 0o600
    /// Mode for certificate-only files (the umask still applies).
    static let publicMode: mode_t = 0o644

    /// Fails early, before any work or prompt, when `path` exists and `overwrite` is false, or when
    /// it is a directory.
    static func checkWritable(_ path: String, overwrite: Bool) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR { throw CLIError.usage("'\(path)' is a directory") }
        if !overwrite { throw CLIError.usage("'\(path)' already exists (use --force to overwrite it)") }
    }

    /// Writes `bytes` to `path`.
    ///
    /// - Parameters:
    ///   - holdsPrivateKey: Whether the file gets mode 0600 (else 0644 less the umask).
    ///   - overwrite: Whether an existing file may be replaced (`--force`).
    static func write(_ bytes: [UInt8], to path: String, holdsPrivateKey: Bool, overwrite: Bool) throws {
        try checkWritable(path, overwrite: overwrite)
        let mode = holdsPrivateKey ? privateMode : publicMode
        let (temporary, descriptor) = try createTemporary(near: path, mode: mode)
        var moved = false
        defer { if !moved { unlink(temporary) } }
        do {
            defer { close(descriptor) }
            // The umask can only take bits away from 0600; make it exactly 0600 anyway.
            if holdsPrivateKey, fchmod(descriptor, mode) != 0 { throw failure("cannot set the mode of", path) }
            try writeAll(bytes, to: descriptor, path: path)
            if fsync(descriptor) != 0 { throw failure("cannot write", path) }
        }
        if overwrite {
            guard rename(temporary, path) == 0 else { throw failure("cannot write", path) }
        } else if link(temporary, path) == 0 {
            unlink(temporary)
        } else if errno == EEXIST {
            throw CLIError.usage("'\(path)' already exists (use --force to overwrite it)")
        } else {
            // Hard links unsupported (some network and FAT file systems): check, then rename.
            var info = stat()
            if lstat(path, &info) == 0 {
                throw CLIError.usage("'\(path)' already exists (use --force to overwrite it)")
            }
            guard rename(temporary, path) == 0 else { throw failure("cannot write", path) }
        }
        moved = true
    }

    private static func createTemporary(near path: String, mode: mode_t) throws -> (String, Int32) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        for _ in 0..<32 {
            let candidate = "\(directory).\(name).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
            let descriptor = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
            if descriptor >= 0 { return (candidate, descriptor) }
            if errno != EEXIST { throw failure("cannot create a file next to", path) }
        }
        throw CLIError.usage("cannot create a temporary file next to '\(path)'")
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws {
        if FileDescriptor.writeAll(bytes, to: descriptor) != nil { throw failure("cannot write", path) }
    }

    private static func failure(_ what: String, _ path: String) -> CLIError {
        CLIError.usage("\(what) '\(path)': \(Files.errnoDescription())")
    }
}
