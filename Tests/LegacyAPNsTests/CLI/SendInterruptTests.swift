import Foundation
import TestSupport
import Testing

/// Ctrl-C during `send`, with real processes and real signals: the first settles what is in
/// flight (one verdict, not the rest of the input) and says so at once; the second abandons and
/// still prints every rejection and the report; both name the line to resume from, in words and
/// in `--json`, for the binary and the HTTP/2 send.
@Suite struct SendInterruptTests {
    static let certs = SendCommandTests.certs
    static let total = 50_000

    /// A gateway that rejects every 500th notification, each error response `errorDelay` late.
    static func slowGateway(errorDelay: String) throws -> (ChildProcess, String) {
        let server = try ChildProcess([
            "serve", "--port", "0", "--feedback-port", "0", "--fail-every", "500", "--error-delay", errorDelay,
        ])
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") })
        return (server, String(listening.dropFirst("listening on ".count)))
    }

    static func input(in scratch: ScratchDirectory) throws -> String {
        let path = scratch.file("in.jsonl")
        try SendCommandTests.jsonLines(1...total).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func rejections(_ server: ChildProcess) -> Int {
        server.stderr.components(separatedBy: "rejected id ").count - 1
    }

    /// Every notification in exactly one bucket, and the notSent events naming all of them.
    static func checkAccounting(_ lines: [String], sourceLocation: SourceLocation = #_sourceLocation) throws
        -> [String: Any]
    {
        let objects = SendCommandTests.objects(lines)
        let summary = try #require(objects.last, sourceLocation: sourceLocation)
        #expect(summary["event"] as? String == "summary", sourceLocation: sourceLocation)
        let buckets = ["accepted", "rejected", "unconfirmed", "notSent"].map { summary[$0] as? Int ?? -1 }
        #expect(buckets.reduce(0, +) == total, sourceLocation: sourceLocation)
        let rejected = objects.filter { $0["event"] as? String == "rejected" }
        #expect(rejected.count == summary["rejected"] as? Int, sourceLocation: sourceLocation)
        let notSent = objects.filter { $0["event"] as? String == "notSent" }
        #expect(
            notSent.reduce(0) { $0 + ($1["count"] as? Int ?? 0) } == summary["notSent"] as? Int,
            sourceLocation: sourceLocation)
        // The last range runs from the resume line to the end of the input.
        let resume = try #require(summary["resumeFromLine"] as? Int, sourceLocation: sourceLocation)
        #expect(notSent.last?["fromLine"] as? Int == resume, sourceLocation: sourceLocation)
        #expect(notSent.last?["toLine"] as? Int == total, sourceLocation: sourceLocation)
        return summary
    }

    @Test func theFirstCtrlCSaysSoAndSettlesOneVerdictNotTheRestOfTheInput() throws {
        let (server, address) = try Self.slowGateway(errorDelay: "0.3")
        defer { _ = server.interruptAndWait() }
        let scratch = try ScratchDirectory()
        let send = try ChildProcess([
            "send", "--gateway", address, "--ca-file", Self.certs + "ca.pem", "--cert",
            Self.certs + "universal-modern.p12", "--passphrase-file", Self.certs + "passphrase.txt",
            "--input", try Self.input(in: scratch), "--json",
        ])
        // Under way: the gateway has rejected a few.
        #expect(server.waitForStderr(timeout: 60) { $0.components(separatedBy: "rejected id ").count > 3 })
        let before = Self.rejections(server)
        send.spawned.send(SIGINT)
        #expect(
            send.waitForStderr {
                $0.contains("stopping: settling ") && $0.contains(" in flight (Ctrl-C again to abandon)")
            })
        #expect(send.waitForExit(timeout: 60) == 130)
        // Settling costs one verdict per connection: the 0.3 s rejections do not go on through
        // the input (before, they went on for the whole of what the connection had taken).
        #expect(Self.rejections(server) - before <= 2)
        let summary = try Self.checkAccounting(send.lines)
        #expect((summary["notSent"] as? Int ?? 0) > Self.total / 2)
        #expect(summary["failure"] as? String == "the send was cancelled")
        #expect(send.stderr.components(separatedBy: "\n").filter { !$0.isEmpty }.count == 1)
    }

    @Test func theSecondCtrlCAbandonsAndTheReportIsStillPrinted() throws {
        // Every error response, the barrier's too, comes 30 s late: settling would take that long.
        let (server, address) = try Self.slowGateway(errorDelay: "30")
        defer { _ = server.kill(SIGKILL) }
        let scratch = try ScratchDirectory()
        let send = try ChildProcess([
            "send", "--gateway", address, "--ca-file", Self.certs + "ca.pem", "--cert",
            Self.certs + "universal-modern.p12", "--passphrase-file", Self.certs + "passphrase.txt",
            "--input", try Self.input(in: scratch), "--json", "--timeout", "60",
        ])
        #expect(server.waitForStderr(timeout: 60) { $0.contains("rejected id ") })
        send.spawned.send(SIGINT)
        #expect(send.waitForStderr { $0.contains("stopping: settling ") })
        send.spawned.send(SIGINT)
        #expect(send.waitForStderr { $0.contains("abandoning: ") })
        #expect(send.waitForExit(timeout: 20) == 130)
        let summary = try Self.checkAccounting(send.lines)
        // What was in flight when the send was abandoned has no verdict: unconfirmed, not lost.
        #expect((summary["unconfirmed"] as? Int ?? 0) > 0)
    }

    @Test(arguments: [true, false])
    func anInterruptedHTTP2SendNamesTheLineToResumeFrom(json: Bool) throws {
        let server = try ChildProcess([
            "serve", "--http2", "--port", "0", "--auth-key",
            "ABC123DEFG:DEF123GHIJ:" + Self.certs + "AuthKey_ABC123DEFG.p8", "--fail-every", "500", "--error-delay",
            "0.3",
        ])
        defer { _ = server.interruptAndWait() }
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") })
        let address = String(listening.dropFirst("listening on ".count).prefix { $0 != " " })
        let scratch = try ScratchDirectory()
        let send = try ChildProcess(
            [
                "send", "--http2", "--gateway", address, "--ca-file", Self.certs + "ca.pem", "--auth-key",
                Self.certs + "AuthKey_ABC123DEFG.p8", "--team-id", "DEF123GHIJ", "--topic", "com.example.legacy",
                "--input", try Self.input(in: scratch),
            ] + (json ? ["--json"] : []))
        #expect(server.waitForStderr(timeout: 60) { $0.components(separatedBy: "BadDeviceToken").count > 3 })
        send.spawned.send(SIGINT)
        #expect(send.waitForStderr { $0.contains("stopping: settling ") })
        #expect(send.waitForExit(timeout: 60) == 130)
        if json {
            _ = try Self.checkAccounting(send.lines)
        } else {
            let notSent = try #require(send.lines.first { $0.hasPrefix("  not sent ") })
            #expect(notSent.contains(": resume with --from-line "))
        }
    }
}
