#if canImport(Glibc)
    import Glibc
#endif

/// Files by path: what the modules above the runtime do with the file system.
package enum FileSystem {
    /// What is at a path.
    package enum Kind: Sendable {
        case regularFile, directory, other
    }

    /// What is at `path` (a symbolic link itself unless `followingLinks`), or nil when nothing is
    /// (or it cannot be looked at).
    package static func kind(of path: String, followingLinks: Bool = true) -> Kind? {
        var info = stat()
        guard (followingLinks ? stat(path, &info) : lstat(path, &info)) == 0 else { return nil }
        return Kind(mode: info.st_mode)
    }

    /// The permission bits of what is at `path` (`0o600`), or nil when nothing is there.
    package static func permissions(of path: String) -> UInt32? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt32(info.st_mode) & 0o7777
    }

    /// Whether something is at `path`.
    package static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Whether the file at `path` can be read.
    package static func isReadable(_ path: String) -> Bool { access(path, R_OK) == 0 }

    /// Creates an empty file with `permissions` unless something exists at `path` (`O_EXCL`);
    /// whether it created one.
    @discardableResult
    package static func createEmpty(_ path: String, permissions: UInt32) -> Bool {
        guard let created = try? FileDescriptor.open(path, .creatingNew(permissions: permissions)) else { return false }
        FileDescriptor.close(created)
        return true
    }

    /// Removes the file at `path`, if any.
    package static func remove(_ path: String) { _ = unlink(path) }

    /// Removes the empty directory at `path`, if any.
    package static func removeDirectory(_ path: String) { _ = rmdir(path) }

    /// Moves `source` to `destination`, replacing what is there (atomically).
    package static func rename(_ source: String, to destination: String) throws(SystemError) {
        guard Glibc.rename(source, destination) == 0 else { throw .last }
    }

    /// Gives the file at `source` a second name, `destination`; fails if that exists.
    package static func link(_ source: String, to destination: String) throws(SystemError) {
        guard Glibc.link(source, destination) == 0 else { throw .last }
    }

    /// Creates a new private (0700) directory `<parent>/<prefix>XXXXXX`; returns its path.
    package static func makeTemporaryDirectory(in parent: String, prefix: String) throws(SystemError) -> String {
        var template = Array("\(parent)/\(prefix)XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw .last }
        return String(cString: created)
    }

    /// Where temporary files go: `$TMPDIR`, else /tmp.
    package static var temporaryDirectory: String {
        Host.environment("TMPDIR").flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }
}

extension FileSystem.Kind {
    init(mode: mode_t) {
        switch mode & S_IFMT {
        case S_IFREG: self = .regularFile
        case S_IFDIR: self = .directory
        default: self = .other
        }
    }
}
