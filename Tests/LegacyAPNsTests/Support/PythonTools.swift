import Foundation
import TestSupport

/// The Python tools that judge our output independently (PyJWT with the cryptography backend),
/// installed by `Scripts/test-tools.sh` into `.build/test-tools/venv` once per test process.
///
/// When the installation fails, ``python()`` throws the script's one-line message, so every test
/// that needs the tools fails with it: a missing judge is never a silent skip.
enum PythonTools {
    struct InstallationFailed: Error, CustomStringConvertible {
        var description: String
    }

    /// The package root (the folder holding `Fixtures`).
    static let packageRoot = String(Fixtures.root.dropLast("/Fixtures".count))

    /// The venv's interpreter, after installing the tools if they are not there yet.
    static func python() throws -> String {
        try installation.get()
    }

    private static let installation: Result<String, InstallationFailed> = {
        let script = packageRoot + "/Scripts/test-tools.sh"
        let result: CLIRunner.Result
        do {
            result = try CLIRunner.runProcess(URL(fileURLWithPath: "/usr/bin/env"), ["bash", script])
        } catch {
            return .failure(InstallationFailed(description: "could not run \(script): \(error)"))
        }
        guard result.status == 0 else {
            let message = result.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
            return .failure(
                InstallationFailed(
                    description: message.isEmpty ? "\(script) exited with status \(result.status)" : message))
        }
        return .success(packageRoot + "/.build/test-tools/venv/bin/python")
    }()

    /// Runs a Python program with the tools' interpreter, feeding `stdin`.
    static func run(_ program: String, arguments: [String] = [], stdin: [UInt8] = []) throws -> CLIRunner.Result {
        try CLIRunner.runProcess(URL(fileURLWithPath: python()), ["-c", program] + arguments, stdin: stdin)
    }
}
