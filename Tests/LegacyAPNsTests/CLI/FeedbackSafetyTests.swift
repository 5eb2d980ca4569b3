import FeedbackClient
import Foundation
import GatewaySimulator
import LegacyAPNs
import ProcessHarness
import TestSupport
import Testing

/// Issue #13 and #14 for `feedback`, with the built binary as a real child process: no tuple read
/// from the service is ever lost to a full stdout or a full disk, a peer that is not a feedback
/// service is named, and a trickling service ends at the deadline.
@Suite(.serialized) struct FeedbackSafetyTests {
    struct Run {
        var status: Int32
        var stdout: [UInt8]
        var stderr: String
        var errorLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

    /// Runs the binary in `directory` with stdout going to `/dev/full` (or a pipe when nil), and
    /// optionally under `ulimit -f` (KiB) with SIGXFSZ ignored, so writes past it fail with EFBIG.
    static func run(
        _ arguments: [String], directory: String, stdoutPath: String? = "/dev/full", fileSizeLimitKiB: Int? = nil
    ) throws -> Run {
        let executable: String
        let fullArguments: [String]
        if let limit = fileSizeLimitKiB {
            executable = "/bin/bash"
            fullArguments =
                ["-c", "ulimit -f \(limit); trap '' XFSZ; exec \"$0\" \"$@\"", CLIRunner.binary.path] + arguments
        } else {
            executable = CLIRunner.binary.path
            fullArguments = arguments
        }
        let child = try SpawnedProcess(
            executable, fullArguments, environment: ["TMPDIR": directory + "/tmp"], directory: directory,
            stdout: stdoutPath.map { .file($0) } ?? .pipe)
        // The bound only keeps a hung child from hanging the suite.
        let termination = child.waitForExit(timeout: 120)
        if termination == nil { child.send(SIGKILL) }
        return Run(
            status: termination?.status ?? -1, stdout: child.standardOutput,
            stderr: String(decoding: child.standardError, as: UTF8.self))
    }

    /// The files in `directory` whose name starts with `prefix`.
    static func files(in directory: String, prefix: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix(prefix) }
            .sorted()
    }

    @Test(.timeLimit(.minutes(1)))
    func aFullStdoutSavesEveryUnprintedTupleToAFileTheErrorNames() async throws {
        let records = FeedbackSamples.records(2_000)
        try await withTestGateway(feedback: records) { gateway in
            let scratch = try ScratchDirectory()
            let result = try Self.run(
                FeedbackCommandTests.arguments(gateway.feedbackAddress, ["--json"]), directory: scratch.path)
            #expect(result.status == 2)
            #expect(result.errorLines.count == 1, "\(result.stderr)")
            let saved = try #require(Self.files(in: scratch.path, prefix: "feedback-unprinted-").first)
            #expect(saved.hasSuffix(".bin"))
            #expect(
                result.errorLines.first
                    == "legacy-push: error: cannot write the results to stdout (No space left on device): 2000 tuples "
                    + "may not have been printed; they are saved in '\(saved)' (raw tuples, as --save writes them; "
                    + "serve --feedback-file reads them)")
            #expect(scratch.read(saved) == FeedbackSamples.encode(records))
            #expect(CredentialsCLI.mode(scratch.file(saved)) == 0o600)
            #expect(gateway.simulator.statistics.feedbackServed == 2_000)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aFullStdoutWithSaveNamesTheSaveFileAndWritesNoOther() async throws {
        let records = FeedbackSamples.records(500)
        try await withTestGateway(feedback: records) { gateway in
            let scratch = try ScratchDirectory()
            let result = try Self.run(
                FeedbackCommandTests.arguments(gateway.feedbackAddress, ["--save", "evidence.bin"]),
                directory: scratch.path)
            #expect(result.status == 2)
            #expect(
                result.errorLines == [
                    "legacy-push: error: cannot write the results to stdout (No space left on device): 500 tuples may "
                        + "not have been printed; they are all in 'evidence.bin' (--save)"
                ])
            #expect(scratch.read("evidence.bin") == FeedbackSamples.encode(records))
            #expect(Self.files(in: scratch.path, prefix: "feedback-unprinted-").isEmpty)
        }
    }

    /// A small disk for `--save`: a 64 KiB tmpfs when this process may mount one (root), else a
    /// 64 KiB file size limit (`ulimit -f`) on the child. Returns the folder, the limit to apply
    /// (nil for tmpfs) and a clean-up.
    static func smallDisk(in scratch: ScratchDirectory) throws -> (path: String, limitKiB: Int?, cleanUp: () -> Void) {
        let folder = scratch.file("small")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        if getuid() == 0,
            let mounted = try? CLIRunner.runProcess(
                URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=64k", "tmpfs", folder]),
            mounted.status == 0
        {
            return (
                folder, nil,
                {
                    _ = try? CLIRunner.runProcess(URL(fileURLWithPath: "/bin/umount"), [folder])
                }
            )
        }
        return (folder, 64, {})
    }

    @Test(.timeLimit(.minutes(1)))
    func aFullDiskLeavesTheSaveFileOnATupleBoundaryAndSaysSo() async throws {
        // 2,000 tuples of 38 bytes are 76,000 bytes: more than the 65,536 the disk takes.
        let records = FeedbackSamples.records(2_000)
        try await withTestGateway(feedback: records, configure: { $0.feedbackChunkSize = 7 }) { gateway in
            let scratch = try ScratchDirectory()
            let disk = try Self.smallDisk(in: scratch)
            defer { disk.cleanUp() }
            let path = disk.path + "/feedback.bin"
            let result = try Self.run(
                FeedbackCommandTests.arguments(gateway.feedbackAddress, ["--save", path]), directory: scratch.path,
                stdoutPath: nil, fileSizeLimitKiB: disk.limitKiB)
            let saved = try #require(FileManager.default.contents(atPath: path)).map { $0 }
            #expect(result.status == 2)
            #expect(saved.count % 38 == 0, "the file ends inside a tuple: \(saved.count) bytes")
            #expect(saved.count > 0)
            #expect(saved.count <= 65_536)
            let kept = saved.count / 38
            #expect(saved == FeedbackSamples.encode(Array(records.prefix(kept))))
            // Every tuple was printed, the ones the disk did not take included.
            let lines = String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
            #expect(lines == records.map(\.textLine))
            let reason = disk.limitKiB == nil ? "No space left on device" : "File too large"
            #expect(
                result.errorLines == [
                    "legacy-push: error: cannot write '\(path)': \(reason); it ends at the last whole tuple, \(kept) "
                        + "tuples saved by this run; the \(2_000 - kept) tuples after them were printed but not saved"
                ])
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aFullDiskAndAFullStdoutTogetherStillLoseNothing() async throws {
        let records = FeedbackSamples.records(2_000)
        try await withTestGateway(feedback: records, configure: { $0.feedbackChunkSize = 7 }) { gateway in
            let scratch = try ScratchDirectory()
            let disk = try Self.smallDisk(in: scratch)
            defer { disk.cleanUp() }
            let path = disk.path + "/feedback.bin"
            let result = try Self.run(
                FeedbackCommandTests.arguments(gateway.feedbackAddress, ["--save", path]), directory: scratch.path,
                fileSizeLimitKiB: disk.limitKiB)
            #expect(result.status == 2)
            let saved = try #require(FileManager.default.contents(atPath: path)).map { $0 }
            #expect(saved.count % 38 == 0)
            let unprinted = try #require(Self.files(in: scratch.path, prefix: "feedback-unprinted-").first)
            let rest = try #require(scratch.read(unprinted))
            #expect(saved + rest == FeedbackSamples.encode(records))
            // Both problems are reported: where the unprinted tuples went, then the --save failure.
            #expect(result.errorLines.count == 2, "\(result.stderr)")
            #expect(
                result.errorLines.first?.hasPrefix(
                    "legacy-push: warning: cannot write the results to stdout (No space left on device): 2000 tuples "
                        + "may not have been printed; ") == true)
            #expect(result.errorLines.first?.contains("are saved in '\(unprinted)'") == true, "\(result.stderr)")
            #expect(result.errorLines.last?.hasPrefix("legacy-push: error: cannot write '\(path)': ") == true)
        }
    }

    @Test func aGatewayPortIsNamedAsNotAFeedbackServiceWithExit3() async throws {
        try await withTestGateway { gateway in
            let result = await CLIRunner.run(
                FeedbackCommandTests.arguments(
                    gateway.endpoints.gateway.description, ["--first-byte-timeout", "0.3"]))
            #expect(result.status == 3)
            #expect(
                result.errorLines == [
                    "legacy-push: error: \(gateway.endpoints.gateway) sent nothing and kept the connection open for "
                        + "0.3 s: the feedback service sends its list and closes at once; is this a gateway port (2195) "
                        + "or another service? (--first-byte-timeout SECONDS waits longer)"
                ])
            #expect(result.stdout.isEmpty)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func theDeadlineEndsATrickleWithTheTuplesSoFarPrintedAndSaved() async throws {
        let records = FeedbackSamples.records(100)
        let server = try RawFeedbackServer(bytes: FeedbackSamples.encode(records), chunkSize: 38, pause: 0.05)
        defer { server.stop() }
        let scratch = try ScratchDirectory()
        let result = await CLIRunner.run(
            FeedbackCommandTests.arguments(
                server.endpoint.description, ["--deadline", "0.8", "--save", scratch.file("feedback.bin")]))
        #expect(result.status == 3)
        let printed = result.outputLines.count
        #expect(printed > 0)
        #expect(printed < records.count)
        #expect(result.outputLines == records.prefix(printed).map(\.textLine))
        #expect(scratch.read("feedback.bin") == FeedbackSamples.encode(Array(records.prefix(printed))))
        #expect(result.errorLines.count == 1)
        let line = try #require(result.errorLines.first)
        #expect(
            line.hasPrefix(
                "legacy-push: error: the feedback service at \(server.endpoint) was still sending after 0.8 s, the "
                    + "deadline for one read: stopped after \(printed) complete tuples"))
        #expect(line.hasSuffix("(--deadline SECONDS allows longer)"))
    }

    @Test func helpDocumentsTheTimeLimitsAndTheUnprintedFile() async {
        let help = await CLIRunner.run(["feedback", "--help"])
        let text = help.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        for phrase in [
            "--first-byte-timeout <seconds>", "--deadline <seconds>", "(default: 300)", "(default: 5)",
            "feedback-unprinted-<time>.bin", "always ends on a tuple boundary", "\"0 tuples\" on stderr",
        ] {
            #expect(text.contains(phrase), "missing \(phrase)")
        }
    }
}
