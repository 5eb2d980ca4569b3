import Foundation
import GatewaySimulator
import LegacyAPNs
import TestSupport
import Testing

/// `send --input` sends each checked line as the frame spooled for it (#18): what the gateway
/// records is exactly what the parser reads from the line, whichever way the line was read (the
/// fast scan or the full parser), from a file or from stdin, and reports name the same lines.
@Suite struct SendInputFramesTests {
    static let token = String(repeating: "a1", count: 32)

    /// Lines of every shape: the common one, keys in another order, a payload given as a string
    /// (the full parser decodes it), escapes, white space, no id, expiry and priority, blank lines.
    static let lines = [
        #"{"token":"\#(token)","payload":{"aps":{"alert":"one"}},"id":1}"#,
        #"{"id":2,"payload":{"aps":{"alert":"two","badge":2}},"token":"\#(token)","priority":5,"expiry":1700000000}"#,
        "",
        #"{"token":"\#(token.uppercased())","payload":"{\"aps\":{\"alert\":\"three \\u00e9\"}}"}"#,
        #"  { "token" : "\#(token)" , "payload" : { "aps" : { "alert" : "fo\"ur" } } , "expiry" : 0 }  "#,
        #"{"token":"<\#(token.prefix(8)) \#(token.dropFirst(8))>","payload":{"aps":{"alert":"five"}},"priority":10}"#,
    ]

    /// What the parser reads from the non-blank lines, numbered as the file numbers them.
    static func parsed() throws -> [(line: Int, notification: PushNotification)] {
        let parser = NotificationLineParser()
        return try lines.enumerated().compactMap { index, line in
            try parser.parse(line, lineNumber: index + 1).map { (index + 1, $0) }
        }
    }

    @Test(arguments: [("enhanced", false), ("frame", false), ("frame", true), ("simple", true)])
    func theGatewayRecordsExactlyWhatTheParserReads(_ format: String, _ fromStdin: Bool) async throws {
        try await withTestGateway { gateway in
            let scratch = try ScratchDirectory()
            let input = scratch.file("mixed.jsonl")
            let text = Self.lines.joined(separator: "\n") + "\n"
            try text.write(toFile: input, atomically: true, encoding: .utf8)
            let arguments = SendCommandTests.baseArguments(gateway) + ["--format", format, "--json"]
            // Stdin through the built binary; a file in-process (fewer child processes).
            let result =
                fromStdin
                ? try CLIRunner.runBinary(arguments + ["--input", "-"], stdin: Array(text.utf8))
                : await CLIRunner.run(arguments + ["--input", input])
            #expect(result.status == 0, "\(result.stderr)")
            let expected = try Self.parsed().map(\.notification)
            let recorded = gateway.recorder.recorded.compactMap { record -> PushNotification? in
                guard case .notification(let notification, _) = record.frame else { return nil }
                return notification
            }
            #expect(recorded.count == expected.count)
            for (got, want) in zip(recorded, expected) {
                #expect(got.token == want.token)
                #expect(got.payload == want.payload)
                if format == "frame" {
                    #expect(got.expiration == want.expiration)
                    #expect(got.priority == want.priority)
                }
                if format == "enhanced" {
                    #expect(got.expiration ?? Expiration(rawValue: 0) == want.expiration ?? Expiration(rawValue: 0))
                }
            }
        }
    }

    /// A rejected notification is named by its line and its own id (or none), with `--from-line`
    /// counting lines from the start of the file.
    @Test func fromLineResumesAndRejectionsNameTheirLinesAndIds() async throws {
        try await TestGateway.withBadTokens(4, in: 400, seed: 18) { gateway, bad in
            let scratch = try ScratchDirectory()
            let input = scratch.file("resume.jsonl")
            // Line i carries notification i; every fifth line has no id.
            let text =
                (1...400).map { index in
                    let notification = TestGateway.notification(index)
                    let id = index % 5 == 0 ? "" : #","id":\#(index)"#
                    return
                        #"{"token":"\#(notification.token.hexString)","payload":\#(notification.payload.string)\#(id)}"#
                }.joined(separator: "\n") + "\n"
            try text.write(toFile: input, atomically: true, encoding: .utf8)
            let result = await CLIRunner.run(
                SendCommandTests.baseArguments(gateway) + ["--input", input, "--from-line", "101", "--json"])
            let resumed = bad.filter { $0 >= 101 }
            #expect(result.status == (resumed.isEmpty ? 0 : 1))
            let events = SendCommandTests.objects(result.outputLines)
            let rejected = events.filter { $0["event"] as? String == "rejected" }
            #expect(Set(rejected.compactMap { $0["line"] as? Int }) == resumed)
            for event in rejected {
                let line = event["line"] as? Int ?? 0
                #expect((event["id"] as? Int) == (line % 5 == 0 ? nil : line))
            }
            let summary = try #require(events.last)
            #expect(summary["sent"] as? Int == 300)
            #expect(summary["rejected"] as? Int == resumed.count)
            let recorded = gateway.recorder.notifications.map(TestGateway.index(of:))
            #expect(Set(recorded) == Set(101...400).subtracting(resumed))
        }
    }

    /// A line in the common shape whose payload is over the limit is named by its number, with the
    /// full parser's words, and nothing is sent.
    @Test func anOversizedPayloadInTheCommonShapeIsReportedWithItsLine() async throws {
        try await withTestGateway { gateway in
            let line =
                #"{"token":"\#(Self.token)","payload":{"aps":{"alert":"\#(String(repeating: "x", count: 80))"}}}"#
            let scratch = try ScratchDirectory()
            let input = scratch.file("oversized.jsonl")
            try (Self.lines[0] + "\n" + line + "\n").write(toFile: input, atomically: true, encoding: .utf8)
            let result = await CLIRunner.run(
                SendCommandTests.baseArguments(gateway) + ["--input", input, "--max-payload", "64"])
            #expect(result.status == 2)
            #expect(result.stderr == "legacy-push: error: line 2: payload has 100 bytes, the limit is 64\n")
            #expect(gateway.simulator.statistics.connections == 0)
        }
    }

    /// Frames larger than the batches the spool is read in (64 KiB) still go out whole, between
    /// small ones.
    @Test func framesLargerThanABatchAreSentWhole() async throws {
        try await withTestGateway(maximumPayloadSize: 65535) { gateway in
            let big = String(repeating: "z", count: 65_500)
            let lines = (1...6).map { index in
                let alert = index % 2 == 0 ? big : "small \(index)"
                return #"{"token":"\#(Self.token)","payload":{"aps":{"alert":"\#(alert)"}},"id":\#(index)}"#
            }
            let scratch = try ScratchDirectory()
            let input = scratch.file("large-frames.jsonl")
            try (lines.joined(separator: "\n") + "\n").write(toFile: input, atomically: true, encoding: .utf8)
            let result = await CLIRunner.run(
                SendCommandTests.baseArguments(gateway) + ["--input", input, "--max-payload", "65535"])
            #expect(result.status == 0, "\(result.stderr)")
            let parser = NotificationLineParser()
            let expected = try lines.enumerated().map { try parser.parse($1, lineNumber: $0 + 1)!.payload }
            #expect(gateway.recorder.notifications.map(\.payload) == expected)
        }
    }
}
