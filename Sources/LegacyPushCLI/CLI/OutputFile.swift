internal import APNsRuntime
import CommandLineKit
import LegacyAPNs

/// Writes output files safely: never over an existing file unless asked, never a moment where a
/// private key is readable by others, never a half-written file under the final name.
///
/// The bytes go to a new temporary file in the same directory, created with its final mode
/// (`O_CREAT | O_EXCL`), then that file is moved into place: with `link` (fails if the name
/// exists) or, when overwriting, `rename` (atomic replace).
enum OutputFile {
    /// Mode for files holding a private key.
    static let privateMode: UInt32 = 0o600
    /// Mode for certificate-only files (the umask still applies).
    static let publicMode: UInt32 = 0o644

    /// Fails early, before any work or prompt, when `path` exists and `overwrite` is false, or when
    /// it is a directory.
    static func checkWritable(_ path: String, overwrite: Bool) throws {
        guard let kind = FileSystem.kind(of: path, followingLinks: false) else { return }
        if kind == .directory { throw CLIError.usage("'\(path)' is a directory") }
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
        defer { if !moved { FileSystem.remove(temporary) } }
        do {
            defer { FileDescriptor.close(descriptor) }
            // The umask can only take bits away from 0600; make it exactly 0600 anyway.
            if holdsPrivateKey {
                do { try FileDescriptor.setPermissions(descriptor, mode) } catch {
                    throw failure("cannot set the mode of", path, error)
                }
            }
            if let code = FileDescriptor.writeAll(bytes, to: descriptor) {
                throw failure("cannot write", path, SystemError(code: code))
            }
            do { try FileDescriptor.sync(descriptor) } catch { throw failure("cannot write", path, error) }
        }
        do {
            if overwrite {
                try FileSystem.rename(temporary, to: path)
            } else {
                do {
                    try FileSystem.link(temporary, to: path)
                    FileSystem.remove(temporary)
                } catch  where error.isAlreadyExisting {
                    throw CLIError.usage("'\(path)' already exists (use --force to overwrite it)")
                } catch {
                    // Hard links unsupported (some network and FAT file systems): check, then rename.
                    if FileSystem.kind(of: path, followingLinks: false) != nil {
                        throw CLIError.usage("'\(path)' already exists (use --force to overwrite it)")
                    }
                    try FileSystem.rename(temporary, to: path)
                }
            }
        } catch let error as SystemError {
            throw failure("cannot write", path, error)
        }
        moved = true
    }

    private static func createTemporary(near path: String, mode: UInt32) throws -> (String, Int32) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        for _ in 0..<32 {
            let candidate = "\(directory).\(name).\(Host.processID).\(UInt32.random(in: 0...UInt32.max)).tmp"
            do {
                return (candidate, try FileDescriptor.open(candidate, .creatingNew(permissions: mode)))
            } catch  where error.isAlreadyExisting {
                continue
            } catch {
                throw failure("cannot create a file next to", path, error)
            }
        }
        throw LegacyAPNsError(.fileError, "cannot create a temporary file next to '\(path)'")
    }

    private static func failure(_ what: String, _ path: String, _ error: SystemError) -> LegacyAPNsError {
        LegacyAPNsError(.fileError, "\(what) '\(path)': \(error)")
    }
}
