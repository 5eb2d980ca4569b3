import Foundation
import TestSupport
import Testing

/// `legacy-push serve`'s options as a user meets them: every value checked before anything starts,
/// an error naming the option, and the help's examples runnable as written.
@Suite struct ServeOptionTests {
    @Test(arguments: [
        (["--fail-token", "00:8"], "expected 64 hex digits (32 bytes, a device token), got 2"),
        (["--fail-token", String(repeating: "ab", count: 32) + ":x"], "--fail-token status"),
        (["--fail-every", "0"], "--fail-every"),
        (["--port", "70000"], "--port"),
        (["--idle-timeout", "-1"], "--idle-timeout"),
        (["--tls-min", "1.1"], "--tls-min must be one of 1.2, 1.3"),
        (["--tls-min", "1.3", "--tls-max", "1.2"], "--tls-min 1.3 needs --tls-max 1.3"),
        (["--environment", "prod"], "--environment must be one of production, development"),
        (["--max-payload", "0"], "--max-payload"),
        (["--no-feedback", "--feedback-file", "x.jsonl"], "--feedback-file needs the feedback service"),
        (["--cert", "server.pem"], "give --cert (with --key unless it holds the key) and --ca-file together"),
    ])
    func badOptionsAreUsageErrorsNamingTheOption(_ arguments: [String], _ message: String) async {
        let result = await CLIRunner.run(["serve"] + arguments)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!result.output.contains("listening"))
    }

    /// Each example of `serve --help` starts and listens (ports swapped for free ones); the one
    /// naming files we do not have fails on them.
    @Test func theHelpExamplesRun() async throws {
        let help = await CLIRunner.run(["serve", "--help"])
        let examples = help.output.components(separatedBy: "EXAMPLES:\n").last!.split(separator: "\n").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        #expect(examples.count == 3)
        let scratch = try ScratchDirectory()
        for example in examples.prefix(2) {
            let arguments =
                example.split(separator: " ").dropFirst().map {
                    $0 == "accepted.jsonl" ? scratch.file("accepted.jsonl") : String($0)
                }.filter { $0 != "--port" && $0 != "0" } + ["--port", "0", "--feedback-port", "0"]
            let server = try ChildProcess(arguments, directory: PythonTools.packageRoot)
            #expect(server.waitForLine { $0.hasPrefix("listening on ") } != nil, "\(example): \(server.stderr)")
            #expect(server.interruptAndWait() == 0, "\(example): \(server.stderr)")
        }
        let third = await CLIRunner.run(examples[2].split(separator: " ").dropFirst().map(String.init))
        #expect(third.status == 2)
        #expect(third.stderr.contains("gateway.pem") || third.stderr.contains("clients-ca.pem"), "\(third.stderr)")
    }
}
