import FeedbackClient
import Foundation
import GatewaySimulator
import LegacyAPNs
import TestSupport
import Testing

@testable import APNsInput

/// Issue #14: `serve --feedback-file` takes the raw tuples `feedback --save` writes as well as
/// JSON Lines, and empty lists and polls say "0 tuples".
@Suite struct FeedbackFileTests {
    @Test func theJSONLinesSampleHoldsTheTuplesOfItsBinaryTwin() throws {
        let json = try FeedbackFile.parse(Fixtures.bytes(Fixtures.feedback("sample.jsonl")), name: "sample")
        let raw = try FeedbackFile.parse(Fixtures.bytes(Fixtures.feedback("feedback-three.bin")), name: "three")
        #expect(json.format == .jsonLines)
        #expect(raw.format == .rawTuples)
        #expect(json.records.count == 3)
        #expect(json.records == raw.records)
        #expect(FeedbackSamples.encode(json.records) == Fixtures.bytes(Fixtures.feedback("feedback-three.bin")))
    }

    @Test func everyBinaryFixtureIsReadOrRefusedByContent() throws {
        #expect(
            try FeedbackFile.parse(Fixtures.bytes(Fixtures.feedback("feedback-empty.bin")), name: "e").records == [])
        let long = try FeedbackFile.parse(Fixtures.bytes(Fixtures.feedback("feedback-long-token.bin")), name: "l")
        #expect(long.records.map(\.token.count) == [100])
        for name in ["feedback-truncated.bin", "feedback-token-length-zero.bin"] {
            let error = try #require(throws: LegacyAPNsError.self) {
                try FeedbackFile.parse(Fixtures.bytes(Fixtures.feedback(name)), name: "'\(name)'")
            }
            #expect(
                error.reason.hasPrefix(
                    "'\(name)' is neither JSON Lines ({\"time\":N,\"token\":\"<hex>\"} a line) nor raw feedback tuples "
                        + "(as feedback --save writes them): "), "\(error.reason)")
        }
    }

    @Test func whatFeedbackSaveWritesIsWhatServeReads() throws {
        let records = FeedbackSamples.records(5) + [FeedbackSamples.record(6, tokenLength: 20, timestamp: .max)]
        let parsed = try FeedbackFile.parse(FeedbackSamples.encode(records), name: "saved")
        #expect(parsed.format == .rawTuples)
        #expect(parsed.records == records)
        // The same list as JSON Lines, as feedback --json prints it, with a blank line and CRLF.
        let text = records.map(\.jsonLine).joined(separator: "\r\n") + "\n\n"
        #expect(try FeedbackFile.parse(Array(text.utf8), name: "json").records == records)
    }

    @Test(arguments: [
        (
            #"{"time":1,"token":"ab"}"# + "\n" + #"{"time":"x","token":"ab"}"#,
            #"'f' line 2: "time" must be UNIX seconds from 0 to 4294967295"#
        ),
        (#"{"time":1}"#, #"'f' line 1: missing "token" (a string of hex digits)"#),
        (#"{"token":"ab"}"#, #"'f' line 1: missing "time""#),
        (#"{"time":1,"token":"xyz"}"#, "'f' line 1: token has 'x' at position 1, expected hex digits"),
        (#"{"time":4294967296,"token":"ab"}"#, #"'f' line 1: "time" must be UNIX seconds from 0 to 4294967295"#),
        (
            "{\"time\":1,",
            #"'f' line 1: expected {"time":N,"token":"<hex>"} (unexpected end of input, expected a string key at byte 11)"#
        ),
    ])
    func badJSONLinesNameTheLine(text: String, message: String) throws {
        let error = try #require(throws: LegacyAPNsError.self) { try FeedbackFile.parse(Array(text.utf8), name: "'f'") }
        #expect(error.reason == message)
    }

    @Test(.timeLimit(.minutes(1)))
    func serveServesTheRawFixtureAndFeedbackPrintsIt() async throws {
        let server = try ChildProcess([
            "serve", "--port", "0", "--feedback-port", "0", "--feedback-file", Fixtures.feedback("feedback-three.bin"),
            "--quiet",
        ])
        defer { _ = server.interruptAndWait() }
        let line = try #require(server.waitForLine { $0.hasPrefix("feedback on ") }, "\(server.stderr)")
        let address = String(line.dropFirst("feedback on ".count))
        let first = await CLIRunner.run(FeedbackCommandTests.arguments(address))
        #expect(first.status == 0)
        #expect(
            first.outputLines
                == (try FeedbackFile.parse(Fixtures.bytes(Fixtures.feedback("sample.jsonl")), name: "s"))
                .records.map(\.textLine))
        let second = await CLIRunner.run(FeedbackCommandTests.arguments(address))
        #expect(second.status == 0)
        #expect(second.stdout.isEmpty)
        #expect(second.stderr == "0 tuples\n")
    }

    @Test(.timeLimit(.minutes(1)))
    func eachEmptyPollSaysZeroTuplesOnStderr() async throws {
        try await withTestGateway { gateway in
            let poller = try ChildProcess(
                FeedbackCommandTests.arguments(gateway.feedbackAddress, ["--interval", "0.1"]))
            #expect(poller.waitForStderr { $0.contains("poll 2: 0 tuples\n") }, "\(poller.stderr)")
            #expect(poller.interruptAndWait() == 0)
            #expect(poller.lines.isEmpty)
            #expect(poller.stderr.hasPrefix("poll 1: 0 tuples\npoll 2: 0 tuples\n"))
        }
    }
}
