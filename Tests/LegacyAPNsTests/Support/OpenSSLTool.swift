import Foundation
import TestSupport

/// Runs the real `openssl` command line, to check our output against OpenSSL's own.
enum OpenSSLTool {
    struct Result {
        var status: Int32
        var output: [UInt8]
        var error: String

        var text: String { String(decoding: output, as: UTF8.self) }
    }

    /// Runs `openssl <arguments>` and waits for it.
    static func run(_ arguments: [String]) throws -> Result {
        let result = try CLIRunner.runProcess(URL(fileURLWithPath: "/usr/bin/env"), ["openssl"] + arguments)
        return Result(status: result.status, output: result.stdout, error: result.stderr)
    }

    /// The `AB:CD:...` value of `openssl x509 -noout -fingerprint -sha256` for a PEM certificate file.
    static func sha256Fingerprint(ofPEMFile path: String) throws -> String {
        let result = try run(["x509", "-in", path, "-noout", "-fingerprint", "-sha256"])
        guard result.status == 0, let equals = result.text.firstIndex(of: "=") else { return "" }
        return String(result.text[result.text.index(after: equals)...]).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
