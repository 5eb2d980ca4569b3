import Foundation
import TestSupport
import Testing

/// ARCHITECTURE.md's rules about the operating system, checked over the sources: `poll(2)` is
/// called in one file, and the OS is reached through APNsRuntime's platform layer.
@Suite struct PlatformSeamTests {
    static let sources = FrameFixtures.directory.deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Sources")

    /// Every Swift file under Sources, by its path relative to Sources, with its text.
    static func swiftFiles() throws -> [(path: String, text: String)] {
        let base = sources.standardizedFileURL.path + "/"
        guard let walker = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil) else {
            return []
        }
        var files: [(String, String)] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let path = url.standardizedFileURL.path
            files.append((String(path.dropFirst(base.count)), try String(contentsOf: url, encoding: .utf8)))
        }
        return files.sorted { $0.0 < $1.0 }
    }

    /// The file's lines that are code, not comments.
    static func codeLines(_ text: String) -> [Substring] {
        text.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
    }

    /// A call of C's `poll(fds, count, timeout)`: three unlabelled arguments (the package's own
    /// `poll()` methods take labels or none).
    static var pollCall: Regex<(Substring, Substring)> { /(^|[^\w])poll\(\s*[&\w.$]+\s*,\s*[^:,]+,/ }

    @Test func pollIsCalledInOneFile() throws {
        let callers = try Self.swiftFiles().filter { file in
            Self.codeLines(file.text).contains { $0.contains("poll(") && $0.contains(Self.pollCall) }
        }
        #expect(callers.map(\.path) == ["APNsRuntime/Platform/Poll.swift"])
    }

    /// The operating system is reached through APNsRuntime (its `Platform` folder, sockets and
    /// threads); above it only APNsCredentials, which sits below the runtime, reads its credential
    /// files with the C library itself.
    @Test func onlyTheRuntimeImportsTheCLibrary() throws {
        let importers = try Self.swiftFiles().filter { file in
            !file.path.hasPrefix("APNsRuntime/")
                && Self.codeLines(file.text).contains { line in
                    let words = line.split(separator: " ")
                    return words.contains("import") && (words.last == "Glibc" || words.last == "Darwin")
                }
        }
        #expect(importers.map(\.path) == ["APNsCredentials/CredentialFile.swift"])
        #expect(importers.count <= 3)
    }
}
