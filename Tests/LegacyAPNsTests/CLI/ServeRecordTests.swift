import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `serve --record` writes while serving: a file being tailed fills as notifications are accepted,
/// and a server killed right after a send was confirmed has recorded every confirmed notification.
@Suite struct ServeRecordTests {
    /// Starts `serve --record PATH` and returns it with its gateway address.
    static func startServer(recording path: String) throws -> (ChildProcess, String) {
        let server = try ChildProcess(["serve", "--port", "0", "--no-feedback", "--quiet", "--record", path])
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") })
        return (server, String(listening.dropFirst("listening on ".count)))
    }

    /// Sends lines 1...`count` with `legacy-push send` and waits for it (exit 0: all confirmed).
    static func send(_ count: Int, to address: String, scratch: ScratchDirectory) throws -> Int32 {
        let input = scratch.file("in.jsonl")
        try SendCommandTests.jsonLines(1...count).write(toFile: input, atomically: true, encoding: .utf8)
        let certs = SendCommandTests.certs
        return try CLIRunner.runBinary([
            "send", "--gateway", address, "--ca-file", certs + "ca.pem", "--cert", certs + "universal-modern.p12",
            "--passphrase-file", certs + "passphrase.txt", "--input", input, "--quiet",
        ]).status
    }

    static func recordedTokens(_ path: String) -> [String] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["token"] as? String
        }
    }

    static let expectedTokens = (1...1000).map { TestGateway.notification($0).token.hexString }

    @Test func recordsReachTheFileWhileTheServerKeepsRunning() throws {
        let scratch = try ScratchDirectory()
        let record = scratch.file("accepted.jsonl")
        let (server, address) = try Self.startServer(recording: record)
        #expect(try Self.send(1000, to: address, scratch: scratch) == 0)
        // A user tailing the file: it fills without the server stopping (the deadline only guards
        // against a hang; the records are due within about 100 ms).
        let deadline = Date().addingTimeInterval(20)
        var tokens = Self.recordedTokens(record)
        while tokens.count < 1000, Date() < deadline {
            usleep(10_000)  // polling interval; the condition, not the pause, decides
            tokens = Self.recordedTokens(record)
        }
        #expect(server.isRunning)
        #expect(tokens == Self.expectedTokens)
        #expect(server.interruptAndWait() == 0)
        #expect(Self.recordedTokens(record) == Self.expectedTokens)  // nothing written twice at the stop
    }

    @Test func aServerKilledRightAfterAConfirmedSendHasRecordedEverythingItConfirmed() throws {
        let scratch = try ScratchDirectory()
        let record = scratch.file("accepted.jsonl")
        let (server, address) = try Self.startServer(recording: record)
        // Exit 0 means every notification was confirmed: the gateway answered the barrier, and
        // then the connection closed.
        #expect(try Self.send(1000, to: address, scratch: scratch) == 0)
        #expect(server.kill(SIGKILL) == .signal(SIGKILL))
        #expect(Self.recordedTokens(record) == Self.expectedTokens)
    }
}
