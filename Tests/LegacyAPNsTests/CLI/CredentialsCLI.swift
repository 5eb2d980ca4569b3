import CommandLineKit
import Foundation
import TestSupport

@testable import LegacyPushCLI

/// Runs `legacy-push` in-process with captured output, for the credential command tests.
enum CredentialsCLI {
    struct Run {
        var status: Int32
        var output: String
        var error: String

        /// The stderr lines that are `legacy-push: error:` lines.
        var errorLines: [Substring] {
            error.split(separator: "\n").filter { $0.hasPrefix("legacy-push: error:") }
        }
    }

    static func run(_ arguments: [String]) async -> Run {
        let console = Console(sink: .memory)
        let status = await LegacyPush.main(arguments, console: console)
        return Run(
            status: status, output: String(decoding: console.capturedOutput, as: UTF8.self),
            error: console.capturedError)
    }

    /// The permission bits of a file.
    static func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int
    }
}
