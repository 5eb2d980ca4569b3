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

    @Test func everyReadmeCommandWorksAsWritten() throws {
        let commands = Self.commands
        #expect(commands.count >= 15)
        let scratch = try ScratchDirectory()
        try FileManager.default.createSymbolicLink(
            atPath: scratch.file("Fixtures"), withDestinationPath: Self.root.appendingPathComponent("Fixtures").path)
        let binDirectory = CLIRunner.binary.deletingLastPathComponent().path
        var servers: [ChildProcess] = []
        defer { for server in servers { _ = server.interruptAndWait() } }

        for command in commands {
            if command.hasPrefix("swift build") || command.hasPrefix("export PATH") { continue }
            if command.hasPrefix("legacy-push serve") {
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
        }
        // The library example from the README, against the simulator the README started.
        let notify = CLIRunner.binary.deletingLastPathComponent().appendingPathComponent("Notify").path
        let example = try Self.bash(notify, path: binDirectory, directory: scratch.path)
        #expect(example.status == 0, "\(example.stderr)")
        #expect(example.stdout.contains("accepted 1, rejected 0, unconfirmed 0"))
        // And the files the README says it produces.
        #expect(FileManager.default.fileExists(atPath: scratch.file("push.pem")))
        #expect(FileManager.default.fileExists(atPath: scratch.file("push-modern.p12")))
        #expect(FileManager.default.fileExists(atPath: scratch.file("hello.bin")))
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
