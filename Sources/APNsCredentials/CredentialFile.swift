import APNsCore

#if canImport(Glibc)
    import Glibc
#endif

/// Reading a credential file, and naming it in errors: the one place the file conveniences touch
/// the file system.
enum CredentialFile {
    /// The largest credential file read (a `.p12` with a long chain is a few KiB).
    static let maximumSize = 64 * 1024 * 1024

    /// The file's bytes, or a `.fileError` naming it ("cannot read 'x.p12': No such file or
    /// directory", "... Is a directory", "... larger than 64 MiB").
    static func read(_ path: String) throws -> [UInt8] {
        func failure(_ reason: String) -> LegacyAPNsError {
            LegacyAPNsError(.fileError, "cannot read '\(path)': \(reason)")
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure(String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw failure(String(cString: strerror(errno))) }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
            if bytes.count > maximumSize { throw failure("larger than 64 MiB") }
        }
    }

    /// Runs `body`, prefixing the reason of a thrown `LegacyAPNsError` with the file's path.
    static func naming<Result>(_ path: String, _ body: () throws -> Result) throws -> Result {
        do {
            return try body()
        } catch let error as LegacyAPNsError {
            throw LegacyAPNsError(error.code, "\(path): \(error.reason)", underlying: error)
        }
    }
}
