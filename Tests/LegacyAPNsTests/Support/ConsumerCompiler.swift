import Foundation
import TestSupport

/// Compiles Swift source as a program of another package would see this one: each file on its own
/// (a module of its own, `Snippet`), seeing only the modules it imports, against the modules this
/// build made (`.build/debug/Modules`, next to the `legacy-push` binary). Type-checking is all it
/// does, so it takes about a second a file instead of the minutes a fresh consumer package's
/// build of the whole of LegacyAPNs would take; what an import makes visible is the same.
///
/// One file per module matters: within one module, extension members of a module imported by one
/// file are visible in every other file, so a snippet lacking an import could pass beside one
/// that has it.
enum ConsumerCompiler {
    struct Failure: Error, CustomStringConvertible {
        var name: String
        var source: String
        var diagnostics: String
        var description: String { "\(name) does not compile:\n\(diagnostics)\n--- source ---\n\(source)" }
    }

    /// Type-checks `source` as a program's main file (or, `asLibrary`, as a file with an `@main`
    /// type); nil when it compiles, else the diagnostics.
    static func typecheck(_ source: String, name: String, asLibrary: Bool = false) throws -> Failure? {
        let scratch = try ScratchDirectory()
        let file = try scratch.write(Array(source.utf8), named: "\(name).swift")
        let build = CLIRunner.binary.deletingLastPathComponent()
        let root = FrameFixtures.directory.deletingLastPathComponent().deletingLastPathComponent()
        var arguments = [
            "swiftc", "-typecheck", "-module-name", "Snippet", file, "-I", build.appending(path: "Modules").path,
        ]
        // The C modules the package's modules were built with: the system libraries' module maps,
        // and the ones SwiftPM wrote for CHexDecode and CFileGuard (APNsRuntime's).
        for map in [
            build.appending(path: "CHexDecode.build/module.modulemap").path,
            build.appending(path: "CFileGuard.build/module.modulemap").path,
            root.appending(path: "Sources/COpenSSL/module.modulemap").path,
            root.appending(path: "Sources/CNGHTTP2/module.modulemap").path,
            root.appending(path: "Sources/CSQLite/module.modulemap").path,
            root.appending(path: "Sources/CLibPQ/module.modulemap").path,
        ] {
            arguments += ["-Xcc", "-fmodule-map-file=\(map)"]
        }
        for include in ["CHexDecode", "CFileGuard"] {
            arguments += ["-Xcc", "-I", "-Xcc", root.appending(path: "Sources/\(include)/include").path]
        }
        // libpq's header directory (pkg-config libpq --cflags), as the package build finds it.
        arguments += ["-Xcc", "-I", "-Xcc", "/usr/include/postgresql"]
        if asLibrary { arguments.append("-parse-as-library") }
        let result = try CLIRunner.runProcess(URL(fileURLWithPath: "/usr/bin/env"), arguments)
        guard result.status != 0 else { return nil }
        return Failure(name: name, source: source, diagnostics: result.stderr + result.output)
    }
}
