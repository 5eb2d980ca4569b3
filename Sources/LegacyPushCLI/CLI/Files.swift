import APNsInput
internal import APNsRuntime
import CommandLineKit

/// File access for the CLI: reading goes through APNsInput's ``InputFile`` (errors are
/// `LegacyAPNsError`s with code `.fileError`, exit 2), writing and temporary folders are here.
/// The library itself takes bytes, never paths.
enum Files {
    /// Opens `path` for reading, `-` meaning stdin.
    static func openForReading(_ path: String) throws -> Int32 { try InputFile.openForReading(path) }

    /// Reads the whole file (or stdin for `-`), refusing files over `limit` bytes.
    static func read(_ path: String, limit: Int = 64 * 1024 * 1024) throws -> [UInt8] {
        try InputFile.read(path, limit: limit)
    }

    /// Calls `body` with successive chunks of the descriptor's contents until end of file.
    static func forEachChunk(_ descriptor: Int32, path: String, _ body: (UnsafeRawBufferPointer) throws -> Void)
        throws
    { try InputFile.forEachChunk(descriptor, path: path, body) }

    /// Closes a descriptor from ``openForReading(_:)`` (stdin stays open).
    static func close(_ descriptor: Int32) { InputFile.close(descriptor) }

    /// Opens (creating if need be) `path` for appending, as `--record` does: 0644, close-on-exec.
    static func openForAppending(_ path: String) throws -> Int32 {
        do {
            return try FileDescriptor.open(path, .appending(permissions: 0o644))
        } catch {
            throw LegacyAPNsError(.fileError, "cannot write '\(path)': \(error)")
        }
    }

    /// A new private folder `<prefix>XXXXXX` in ``temporaryDirectory``, holding `what`.
    static func makeTemporaryFolder(prefix: String, for what: String) throws -> String {
        do {
            return try FileSystem.makeTemporaryDirectory(in: temporaryDirectory, prefix: prefix)
        } catch {
            throw LegacyAPNsError(.fileError, "cannot create a temporary folder for \(what): \(error)")
        }
    }

    /// Where temporary files go: `$TMPDIR`, else /tmp.
    static var temporaryDirectory: String { FileSystem.temporaryDirectory }
}
