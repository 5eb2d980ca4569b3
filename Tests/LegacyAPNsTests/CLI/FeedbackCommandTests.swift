import FeedbackClient
import Foundation
import GatewaySimulator
import LegacyAPNs
import ProcessHarness
import TestSupport
import Testing

/// `legacy-push feedback` in-process against the simulator over real TLS.
@Suite struct FeedbackCommandTests {
    /// Options reaching `address` with the fixture client certificate and CA.
    static func arguments(
        _ address: String, cert: String = "universal-modern.p12", _ extra: [String] = []
    ) -> [String] {
        [
            "feedback", "--feedback", address, "--ca-file", Fixtures.certs("ca.pem"), "--cert", Fixtures.certs(cert),
            "--passphrase-file", Fixtures.certs("passphrase.txt"),
        ] + extra
    }

    @Test func printsEveryTupleAndExitsZero() async throws {
        let records = FeedbackSamples.records(3)
        try await withTestGateway(feedback: records) { gateway in
            let result = await CLIRunner.run(Self.arguments(gateway.feedbackAddress))
            #expect(result.status == 0)
            #expect(result.stderr.isEmpty)
            #expect(result.outputLines == records.map(\.textLine))
            let line = try #require(result.outputLines.first)
            #expect(line.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ [0-9a-f]{64}/) != nil)
            #expect(line == "2026-01-31T12:00:01Z \(records[0].token.hexString)")
        }
    }

    @Test func onceIsTheDefaultAndMayBeGiven() async throws {
        try await withTestGateway(feedback: FeedbackSamples.records(1)) { gateway in
            let result = await CLIRunner.run(Self.arguments(gateway.feedbackAddress, ["--once"]))
            #expect(result.status == 0)
            #expect(result.outputLines.count == 1)
        }
    }

    @Test func jsonPrintsOneObjectPerTuple() async throws {
        let records = [FeedbackSamples.record(1, timestamp: 1_769_860_800), FeedbackSamples.record(2, tokenLength: 20)]
        try await withTestGateway(feedback: records) { gateway in
            let result = await CLIRunner.run(Self.arguments(gateway.feedbackAddress, ["--json"]))
            #expect(result.status == 0)
            #expect(result.outputLines.first == #"{"time":1769860800,"token":"\#(records[0].token.hexString)"}"#)
            #expect(result.outputLines == records.map(\.jsonLine))
        }
    }

    @Test func edgeTimestampsPrintAsUnsigned() async throws {
        try await withTestGateway(feedback: [
            FeedbackSamples.record(1, timestamp: 0), FeedbackSamples.record(2, timestamp: 0xFFFF_FFFF),
        ]) { gateway in
            let result = await CLIRunner.run(Self.arguments(gateway.feedbackAddress))
            #expect(result.outputLines.map { $0.prefix(20) } == ["1970-01-01T00:00:00Z", "2106-02-07T06:28:15Z"])
            let json = await CLIRunner.run(Self.arguments(gateway.feedbackAddress, ["--json"]))
            #expect(json.outputLines.isEmpty)  // served once: the second read finds nothing
            #expect(json.status == 0)
        }
    }

    @Test func emptyListPrintsNothingOnStdoutAndExitsZero() async throws {
        try await withTestGateway { gateway in
            let result = await CLIRunner.run(Self.arguments(gateway.feedbackAddress))
            #expect(result.status == 0)
            #expect(result.stdout.isEmpty)
            // Issue #14: an empty list is said on stderr, so stdout stays clean for scripts.
            #expect(result.stderr == "0 tuples\n")
        }
    }

    @Test func legacyRC2P12WorksForFeedbackAsForSend() async throws {
        let records = FeedbackSamples.records(2)
        try await withTestGateway(feedback: records) { gateway in
            let result = await CLIRunner.run(Self.arguments(gateway.feedbackAddress, cert: "universal-legacy.p12"))
            #expect(result.status == 0)
            #expect(result.stderr.isEmpty)
            #expect(result.outputLines == records.map(\.textLine))
        }
    }

    @Test func saveAppendsTheRawTuplesWithMode0600() async throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("feedback.bin")
        let first = FeedbackSamples.records(3) + [FeedbackSamples.record(9, tokenLength: 20, timestamp: .max)]
        try await withTestGateway(feedback: first, configure: { $0.feedbackChunkSize = 7 }) { gateway in

            let run1 = await CLIRunner.run(Self.arguments(gateway.feedbackAddress, ["--save", path]))
            #expect(run1.status == 0)
            #expect(run1.outputLines == first.map(\.textLine))
            #expect(scratch.read("feedback.bin") == FeedbackSamples.encode(first))
            #expect(CredentialsCLI.mode(path) == 0o600)

            let second = FeedbackSamples.records(2, from: 50)
            gateway.simulator.setFeedback(second)
            let run2 = await CLIRunner.run(Self.arguments(gateway.feedbackAddress, ["--save", path, "--json"]))
            #expect(run2.status == 0)
            #expect(run2.outputLines == second.map(\.jsonLine))
            #expect(scratch.read("feedback.bin") == FeedbackSamples.encode(first + second))

            let run3 = await CLIRunner.run(Self.arguments(gateway.feedbackAddress, ["--save", path]))
            #expect(run3.status == 0)
            #expect(scratch.read("feedback.bin") == FeedbackSamples.encode(first + second))
            #expect(CredentialsCLI.mode(path) == 0o600)
        }
    }

    @Test func truncatedStreamPrintsAndSavesTheCompleteTuplesThenFailsWithExitThree() async throws {
        let scratch = try ScratchDirectory()
        let complete = FeedbackSamples.records(3)
        let bytes = FeedbackSamples.encode(complete + [FeedbackSamples.record(4)]).dropLast(1)
        let server = try RawFeedbackServer(bytes: Array(bytes), chunkSize: 7)
        defer { server.stop() }
        let result = await CLIRunner.run(
            Self.arguments(server.endpoint.description, ["--save", scratch.file("evidence.bin")]))
        #expect(result.status == 3)
        #expect(result.outputLines == complete.map(\.textLine))
        #expect(result.errorLines.count == 1)
        #expect(result.errorLines.first?.hasPrefix("legacy-push: error: the feedback service at") == true)
        #expect(result.errorLines.first?.contains("closed the connection inside a tuple") == true)
        #expect(scratch.read("evidence.bin") == FeedbackSamples.encode(complete))
    }

    @Test func intervalGivesUpAfterMaxFailuresWithOneErrorLine() async throws {
        let port = try freeLoopbackPort()
        let result = await CLIRunner.run(
            Self.arguments("127.0.0.1:\(port)", ["--interval", "5", "--max-failures", "1"]))
        #expect(result.status == 3)
        #expect(result.errorLines == ["legacy-push: error: cannot connect to 127.0.0.1:\(port): Connection refused"])
    }

    @Test func intervalEndsAtOnceOnACertificateFailure() async throws {
        try await withTestGateway(feedback: FeedbackSamples.records(1)) { gateway in
            let result = await CLIRunner.run(
                Self.arguments(gateway.feedbackAddress, cert: "untrusted.p12", ["--interval", "5"]))
            #expect(result.status == 3)
            #expect(result.errorLines.count == 1)
            #expect(result.errorLines.first?.contains("refused the client certificate") == true)
        }
    }

    enum BadInput: String, CaseIterable, Sendable {
        case negativeInterval, zeroInterval, nonNumericInterval, onceAndInterval, maxFailuresWithoutInterval
        case sandboxAndFeedback, malformedAddress, missingCertFile, missingCAFile, wrongPassphrase, unwritableSave
        case untrustedServer, nothingListening

        var expectedStatus: Int32 {
            switch self {
            case .untrustedServer, .nothingListening: 3
            default: 2
            }
        }

        /// A fragment of the one error line.
        var message: String {
            switch self {
            case .negativeInterval: "--interval must be greater than 0, got -1"
            case .zeroInterval: "--interval must be greater than 0, got 0"
            case .nonNumericInterval: "--interval expects a number of seconds, got 'daily'"
            case .onceAndInterval: "give either --once or --interval, not both"
            case .maxFailuresWithoutInterval: "--max-failures needs --interval"
            case .sandboxAndFeedback: "give either --sandbox or --feedback, not both"
            case .malformedAddress: "--feedback needs a port: HOST:PORT, e.g. localhost:2196"
            case .missingCertFile: "cannot read '/nonexistent/push.p12': No such file or directory"
            case .missingCAFile: "cannot read '/nonexistent/ca.pem'"
            case .wrongPassphrase: "wrong passphrase"
            case .unwritableSave: "cannot open '/nonexistent/dir/feedback.bin' for --save"
            case .untrustedServer: "is not trusted"
            case .nothingListening: "Connection refused"
            }
        }

        func arguments(gateway: String, scratch: ScratchDirectory) throws -> [String] {
            let base = FeedbackCommandTests.arguments(gateway)
            switch self {
            case .negativeInterval: return base + ["--interval", "-1"]
            case .zeroInterval: return base + ["--interval=0"]
            case .nonNumericInterval: return base + ["--interval", "daily"]
            case .onceAndInterval: return base + ["--once", "--interval", "10"]
            case .maxFailuresWithoutInterval: return base + ["--max-failures", "3"]
            case .sandboxAndFeedback: return base + ["--sandbox"]
            case .malformedAddress: return FeedbackCommandTests.arguments("localhost")
            case .missingCertFile:
                return ["feedback", "--feedback", gateway, "--cert", "/nonexistent/push.p12"]
            case .missingCAFile:
                return ["feedback", "--feedback", gateway, "--ca-file", "/nonexistent/ca.pem", "--cert", "x.p12"]
            case .wrongPassphrase:
                let wrong = try scratch.write(Array("not-it\n".utf8), named: "wrong.txt")
                return [
                    "feedback", "--feedback", gateway, "--ca-file", Fixtures.certs("ca.pem"), "--cert",
                    Fixtures.certs("universal-legacy.p12"), "--passphrase-file", wrong,
                ]
            case .unwritableSave: return base + ["--save", "/nonexistent/dir/feedback.bin"]
            case .untrustedServer:
                return FeedbackCommandTests.arguments(gateway).map {
                    $0 == Fixtures.certs("ca.pem") ? Fixtures.certs("untrusted-ca.pem") : $0
                }
            case .nothingListening: return FeedbackCommandTests.arguments("127.0.0.1:\(try freeLoopbackPort())")
            }
        }
    }

    @Test(arguments: BadInput.allCases)
    func badInputExitsWithOneErrorLineAndLeavesTheListOnTheService(problem: BadInput) async throws {
        let records = FeedbackSamples.records(2)
        try await withTestGateway(feedback: records) { gateway in
            let scratch = try ScratchDirectory()
            let result = await CLIRunner.run(try problem.arguments(gateway: gateway.feedbackAddress, scratch: scratch))
            #expect(result.status == problem.expectedStatus)
            #expect(result.stdout.isEmpty)
            #expect(result.errorLines.count == 1, "\(result.stderr)")
            #expect(result.errorLines.first?.hasPrefix("legacy-push: error: ") == true)
            #expect(result.stderr.contains(problem.message), "\(result.stderr)")
            // Nothing was read, so the service still has its list.
            #expect(try await FeedbackSamples.reader(gateway.feedbackService).read().records == records)
        }
    }

    @Test func helpShowsTheContractOptionsAndExamples() async {
        let result = await CLIRunner.run(["feedback", "--help"])
        #expect(result.status == 0)
        for option in [
            "--once", "--interval <seconds>", "--json", "--save <path>", "--feedback <host:port>", "--sandbox",
            "--ca-file <path>", "--cert <path>", "--key <path>", "--passphrase-env <name>",
            "--passphrase-file <path>", "EXAMPLES:", "Exit status:",
        ] {
            #expect(result.output.contains(option), "missing \(option)")
        }
    }
}

/// The built binary, stopped by a signal while it polls.
@Suite struct FeedbackCommandSignalTests {
    enum Stop: String, CaseIterable, Sendable {
        case sigint, sigterm
    }

    @Test(.timeLimit(.minutes(1)), arguments: Stop.allCases)
    func intervalPollingStopsCleanlyOnASignal(stop: Stop) async throws {
        // Every poll gets one new tuple, so each poll shows up as one line of output.
        let served = Locked(0)
        let simulator = Locked<GatewaySimulator?>(nil)
        let gateway = try await TestGateway.start(feedback: [FeedbackSamples.record(1)]) { configuration in
            let recordEvent = configuration.events
            configuration.events = { event in
                recordEvent?(event)
                guard case .feedbackServed = event else { return }
                let count = served.update { count -> Int in
                    count += 1
                    return count
                }
                simulator.get()?.setFeedback([FeedbackSamples.record(count + 1)])
            }
        }
        simulator.set(gateway.simulator)

        let child = try SpawnedProcess(
            CLIRunner.binary.path, FeedbackCommandTests.arguments(gateway.feedbackAddress, ["--interval", "0.2"]))
        // Two polls have finished and printed; the bound only guards against a hang.
        let polled = child.wait(timeout: 30) { out, _, _ in out.count(where: { $0 == 0x0A }) >= 2 }
        switch stop {
        case .sigint: child.send(SIGINT)
        case .sigterm: child.send(SIGTERM)
        }
        let termination = child.waitForExit(timeout: 30)
        if termination == nil { child.send(SIGKILL) }
        await gateway.stop()  // (deinit stops it too, should the start throw)
        let stdout = child.standardOutput

        #expect(polled)
        #expect(termination == .exit(0))
        #expect(String(decoding: child.standardError, as: UTF8.self) == "")
        let lines = String(decoding: stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.count >= 2)
        #expect(lines == (1...lines.count).map { FeedbackSamples.record($0).textLine })
    }

    /// Evidence first: with stdout a pipe nobody reads (every write fails with EPIPE), every
    /// tuple still reaches the --save file; the run says it could not print them (issue #13: a
    /// failed write is never exit 0).
    @Test(.timeLimit(.minutes(1)))
    func brokenPipeLosesNothingThatWasSaved() async throws {
        let records = FeedbackSamples.records(2_000)
        try await withTestGateway(feedback: records, configure: { $0.feedbackChunkSize = 7 }) { gateway in
            let scratch = try ScratchDirectory()
            let path = scratch.file("feedback.bin")

            let child = try SpawnedProcess(
                CLIRunner.binary.path, FeedbackCommandTests.arguments(gateway.feedbackAddress, ["--save", path]),
                stdout: .brokenPipe, stderr: .null)
            #expect(child.waitForExit(timeout: 50) == .exit(2))
            #expect(scratch.read("feedback.bin") == FeedbackSamples.encode(records))
            #expect(gateway.simulator.statistics.feedbackServed == 2_000)
        }
    }
}
