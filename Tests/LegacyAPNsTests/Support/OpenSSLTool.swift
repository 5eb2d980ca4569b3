import Foundation

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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Outputs here are a few KiB, far below a pipe's buffer, so reading one after the other is safe.
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, output: Array(outputData),
            error: String(decoding: errorData, as: UTF8.self))
    }

    /// The `AB:CD:...` value of `openssl x509 -noout -fingerprint -sha256` for a PEM certificate file.
    static func sha256Fingerprint(ofPEMFile path: String) throws -> String {
        let result = try run(["x509", "-in", path, "-noout", "-fingerprint", "-sha256"])
        guard result.status == 0, let equals = result.text.firstIndex(of: "=") else { return "" }
        return String(result.text[result.text.index(after: equals)...]).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
