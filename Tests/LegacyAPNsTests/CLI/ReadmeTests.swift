import Foundation
import TestSupport
import Testing

/// Runs every command in README.md as written (from a scratch directory that sees the repository's
/// Fixtures), so the README cannot drift from the tool. `swift run legacy-push demo` and
/// `swift test` themselves are covered by DemoCommandTests and by .ci/run.
@Suite(.serialized) struct ReadmeTests {
    static let root = FrameFixtures.directory.deletingLastPathComponent().deletingLastPathComponent()

    /// The lines of the README's ```sh blocks.
    static var commands: [String] {
        let text = (try? String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)) ?? ""
        var lines: [String] = []
        var inBlock = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inBlock = line == "```sh"
                continue
            }
            if inBlock, !line.isEmpty { lines.append(String(line)) }
        }
        return lines
    }

    @Test func readmeExampleIsTheNotifyTarget() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let example = try String(
            contentsOf: Self.root.appendingPathComponent("Examples/Notify/Notify.swift"), encoding: .utf8)
        #expect(readme.contains("```swift\n" + example + "```"))
    }

    /// The example's mistakes are one line on stderr and exit 1, not a backtrace: a folder
    /// without the test certificates, and a thrown error (a malformed gateway address).
    @Test(arguments: [
        (
            ["/nonexistent/certs"],
            "Notify: error: no test certificates in '/nonexistent/certs': give the path to a LegacyAPNs checkout's Fixtures/certs\n"
        ),
        (
            [Fixtures.root + "/certs", "https://127.0.0.1:2195"],
            "Notify: error: the gateway takes HOST:PORT, not a URL: drop 'https://'\n"
        ),
    ])
    func theNotifyExampleReportsAMistakeInOneLine(_ arguments: [String], _ message: String) throws {
        let notify = CLIRunner.binary.deletingLastPathComponent().appendingPathComponent("Notify")
        let result = try CLIRunner.runProcess(notify, arguments)
        #expect(result.status == 1)
        #expect(result.stderr == message)
        #expect(result.output.isEmpty)
    }

    @Test func everyReadmeCommandWorksAsWritten() throws {
        let commands = Self.commands
        #expect(commands.count >= 15)
        let scratch = try ScratchDirectory()
        try FileManager.default.createSymbolicLink(
            atPath: scratch.file("Fixtures"), withDestinationPath: Self.root.appendingPathComponent("Fixtures").path)
        // A checkout-like folder: the repository's .gitignore and the fixtures, committed, so
        // `git status` afterwards shows whatever the README's commands leave behind (issue #14).
        try FileManager.default.copyItem(
            atPath: Self.root.appendingPathComponent(".gitignore").path, toPath: scratch.file(".gitignore"))
        let git = try Self.git(["init", "-q"], in: scratch.path)
        #expect(git.status == 0, "\(git.stderr)")
        _ = try Self.git(["add", "-A"], in: scratch.path)
        let commit = try Self.git(
            ["-c", "user.name=readme", "-c", "user.email=readme@example.invalid", "commit", "-q", "-m", "checkout"],
            in: scratch.path)
        #expect(commit.status == 0, "\(commit.stderr)")

        let binDirectory = CLIRunner.binary.deletingLastPathComponent().path
        var servers: [ChildProcess] = []
        defer { for server in servers { _ = server.interruptAndWait() } }
        var feedbackRuns: [(stdout: String, stderr: String)] = []
        var bridgeFeedback: [String] = []

        for command in commands {
            if command.hasPrefix("swift build") || command.hasPrefix("export PATH") { continue }
            if command.hasPrefix("legacy-push serve") || command.hasPrefix("legacy-push bridge") {
                let arguments = command.split(separator: " ").dropFirst().map(String.init)
                let server = try ChildProcess(arguments, directory: scratch.path)
                servers.append(server)
                #expect(server.waitForLine { $0.hasPrefix("listening on") } != nil, "\(command): \(server.stderr)")
                continue
            }
            var expected: Int32 = 0
            if let range = command.range(of: "# exits ") { expected = Int32(command[range.upperBound...]) ?? 0 }
            let result = try Self.bash(command, path: binDirectory, directory: scratch.path)
            #expect(result.status == expected, "\(command)\nstdout: \(result.stdout)\nstderr: \(result.stderr)")
            if command.hasPrefix("legacy-push feedback") {
                if command.contains("127.0.0.1:2396") {
                    bridgeFeedback.append(result.stdout)
                } else {
                    feedbackRuns.append((result.stdout, result.stderr))
                }
            }
        }
        // The feedback step prints the tuples `serve --feedback-file` served, then an empty list.
        #expect(feedbackRuns.count == 2)
        if feedbackRuns.count == 2 {
            let tuples = feedbackRuns[0].stdout.split(separator: "\n").map(String.init)
            #expect(
                tuples == [
                    "2026-01-31T12:00:00Z 740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad",
                    "1970-01-01T00:00:00Z " + String(repeating: "0", count: 64),
                    "2106-02-07T06:28:15Z " + String(repeating: "5a", count: 32),
                ])
            #expect(feedbackRuns[1].stdout.isEmpty)
            #expect(feedbackRuns[1].stderr == "0 tuples\n")
            #expect(scratch.read(".scratch/feedback.bin") == Fixtures.bytes(Fixtures.feedback("feedback-three.bin")))
        }
        // "Keep a legacy sender working": the 410 the bridge got, read back from its feedback port.
        #expect(bridgeFeedback == ["2026-02-02T00:00:00Z " + String(repeating: "5a", count: 32) + "\n"])
        // The library example from the README, against the simulator the README started, and
        // against a port where nothing listens.
        let notify = CLIRunner.binary.deletingLastPathComponent().appendingPathComponent("Notify").path
        let example = try Self.bash(
            notify + " Fixtures/certs 127.0.0.1:2195", path: binDirectory, directory: scratch.path)
        #expect(example.status == 0, "\(example.stderr)")
        #expect(example.stdout.hasPrefix("3 sent: 3 accepted, 0 rejected, 0 unconfirmed, 0 resent, 1 connection, "))
        let closed = try freeLoopbackPort()
        let failing = try Self.bash(
            notify + " Fixtures/certs 127.0.0.1:\(closed)", path: binDirectory, directory: scratch.path)
        #expect(failing.status == 1)
        #expect(failing.stdout.contains("\nfailed: cannot connect to 127.0.0.1:\(closed): Connection refused"))
        // And the files the README says it produces, all under the ignored .scratch/.
        for file in [
            "push.pem", "push-modern.p12", "hello.bin", "batch.jsonl", "accepted.jsonl", "feedback.bin",
            "http2-accepted.jsonl", "legacy.jsonl", "bridge.sqlite",
        ] {
            #expect(FileManager.default.fileExists(atPath: scratch.file(".scratch/" + file)), "\(file)")
        }
        for server in servers { _ = server.interruptAndWait() }
        servers = []
        let status = try Self.git(["status", "--porcelain", "--untracked-files=all"], in: scratch.path)
        #expect(status.status == 0)
        #expect(status.stdout.isEmpty, "the README's commands left files git would see:\n\(status.stdout)")
    }

    static func git(_ arguments: [String], in directory: String) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        let result = try CLIRunner.runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["git"] + arguments, directory: URL(fileURLWithPath: directory))
        return (result.status, result.output, result.stderr)
    }

    static func bash(_ command: String, path: String, directory: String) throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        let inherited = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let result = try CLIRunner.runProcess(
            URL(fileURLWithPath: "/bin/bash"), ["-o", "pipefail", "-c", command],
            environment: ["PATH": path + ":" + inherited], directory: URL(fileURLWithPath: directory))
        return (result.status, result.output, result.stderr)
    }
}
