import Foundation
import GatewaySimulator
import TestSupport
import Testing

/// `legacy-push send --http2 --input` as a user runs it, against `serve --http2 --record`: what
/// goes out is what the simulator records.
@Suite struct SendHTTP2CommandTests {
    /// `--push-type` is the default for lines that name none (they used to go out with the type
    /// their payload implies, although the check had used the default); a line's own type wins.
    @Test func theDefaultPushTypeReachesTheServerForLinesWithoutOne() async throws {
        let scratch = try ScratchDirectory()
        let record = scratch.file("accepted.jsonl")
        let server = try ChildProcess(["serve", "--http2", "--port", "0", "--quiet", "--record", record])
        defer { _ = server.interruptAndWait() }
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let port = String(listening.dropFirst("listening on 127.0.0.1:".count).prefix { $0.isNumber })
        let (first, second) = (String(repeating: "ab", count: 32), String(repeating: "cd", count: 32))
        let lines = [
            #"{"token":"\#(first)","payload":{"aps":{"alert":"one"}},"priority":5}"#,
            #"{"token":"\#(second)","payload":{"aps":{"alert":"two"}},"pushType":"alert"}"#,
        ]
        let input = try scratch.write(Array((lines.joined(separator: "\n") + "\n").utf8), named: "in.jsonl")
        let result = await CLIRunner.run([
            "send", "--http2", "--input", input, "--push-type", "background", "--gateway", "127.0.0.1:\(port)",
            "--ca-file", Fixtures.certs("ca.pem"), "--cert", Fixtures.certs("universal-modern.p12"),
            "--passphrase-file", Fixtures.certs("passphrase.txt"), "--json", "--quiet",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.output.contains(#""accepted":2"#), "\(result.output)")
        var recorded: [String] = []
        let deadline = Date().addingTimeInterval(5)
        while recorded.count < 2, Date() < deadline {
            recorded = ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").split(separator: "\n").map(
                String.init)
            if recorded.count < 2 { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(recorded.count == 2)
        let byToken = Dictionary(
            uniqueKeysWithValues: recorded.map { line in
                (line.contains(first) ? "first" : "second", line)
            })
        #expect(byToken["first"]?.contains(#""pushType":"background""#) == true, "\(recorded)")
        #expect(byToken["second"]?.contains(#""pushType":"alert""#) == true, "\(recorded)")
    }

    /// The adversarial run: `send --http2 --cert` used to open about 100 streams before the
    /// server's SETTINGS arrived, and a server allowing fewer that ends the connection for the
    /// excess (as APNs does, and `serve --http2` now does) got 0 of 5,000. One stream until the
    /// SETTINGS, then the server's 10: every notification delivered once, on one connection.
    @Test func aCertificateSendStaysWithinASmallEnforcedStreamLimitAndDeliversEverything() throws {
        let scratch = try ScratchDirectory()
        let record = scratch.file("accepted.jsonl")
        let server = try ChildProcess(["serve", "--http2", "--port", "0", "--max-streams", "10", "--record", record])
        defer { _ = server.interruptAndWait() }
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let port = String(listening.dropFirst("listening on 127.0.0.1:".count).prefix { $0.isNumber })
        let count = 5000
        let tokens = (1...count).map { index in
            let hex = String(index, radix: 16)
            return String(repeating: "0", count: 64 - hex.count) + hex
        }
        let lines = tokens.map { #"{"token":"\#($0)","payload":{"aps":{"alert":"hi"}}}"# }
        let input = try scratch.write(Array((lines.joined(separator: "\n") + "\n").utf8), named: "in.jsonl")
        let result = try CLIRunner.runProcess(
            CLIRunner.binary,
            [
                "send", "--http2", "--input", input, "--gateway", "127.0.0.1:\(port)", "--ca-file",
                Fixtures.certs("ca.pem"), "--cert", Fixtures.certs("universal-modern.p12"), "--passphrase-file",
                Fixtures.certs("passphrase.txt"), "--json",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(result.outputLines.last)
        for field in [
            #""accepted":5000"#, #""rejected":0"#, #""unconfirmed":0"#, #""notSent":0"#, #""retried":0"#,
            #""possibleDuplicates":0"#, #""connections":1"#,
        ] {
            #expect(summary.contains(field), "\(summary)")
        }
        #expect(server.interruptAndWait() == 0)
        #expect(!server.stderr.contains(ProviderConnection.maximumStreamsViolated), "\(server.stderr)")
        // The simulator's record: each token exactly once.
        let recorded = ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").split(separator: "\n")
        #expect(recorded.count == count)
        var seen: [String: Int] = [:]
        for line in recorded {
            guard let range = line.range(of: #""token":""#) else { continue }
            seen[String(line[range.upperBound...].prefix(64)), default: 0] += 1
        }
        #expect(Set(seen.keys) == Set(tokens))
        #expect(seen.values.allSatisfy { $0 == 1 })
    }

    /// A line's `pushType` is checked as `--push-type` is: one Apple does not document is an input
    /// error naming the line, before anything connects (it used to be sent, and refused by the
    /// server one notification at a time).
    @Test func anUnknownPushTypeInALineIsAnInputErrorAndNothingIsSent() async throws {
        let scratch = try ScratchDirectory()
        let record = scratch.file("accepted.jsonl")
        let server = try ChildProcess(["serve", "--http2", "--port", "0", "--record", record])
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let port = String(listening.dropFirst("listening on 127.0.0.1:".count).prefix { $0.isNumber })
        let token = String(repeating: "ab", count: 32)
        let lines = [
            #"{"token":"\#(token)","payload":{"aps":{"alert":"one"}}}"#,
            #"{"token":"\#(token)","payload":{"aps":{"alert":"two"}},"pushType":"alret"}"#,
        ]
        let input = try scratch.write(Array((lines.joined(separator: "\n") + "\n").utf8), named: "in.jsonl")
        let result = try CLIRunner.runBinary([
            "send", "--http2", "--input", input, "--gateway", "127.0.0.1:\(port)", "--ca-file",
            Fixtures.certs("ca.pem"), "--cert", Fixtures.certs("universal-modern.p12"), "--passphrase-file",
            Fixtures.certs("passphrase.txt"), "--json",
        ])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.output.isEmpty, "\(result.output)")
        let names =
            "alert, background, location, voip, complication, fileprovider, mdm, liveactivity, pushtotalk, widgets, "
            + "controls"
        #expect(
            result.errorLines
                == [
                    "legacy-push: error: line 2: pushType must be one of \(names), got 'alret' (did you mean 'alert'?)"
                ], "\(result.stderr)")
        #expect(server.interruptAndWait() == 0)
        #expect(((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").isEmpty)
    }

    /// A server whose clock is two hours ahead (as a sender whose clock is two hours behind):
    /// every fresh token is refused as expired. The send stops at the first refusal with one
    /// error saying the clock is probably wrong, exit 3, the rest not sent; it used to open two
    /// connections and sign two tokens per notification and exit 1.
    @Test func aFreshTokenRefusedAsExpiredStopsTheSendNamingTheClock() throws {
        let scratch = try ScratchDirectory()
        let server = try ChildProcess([
            "serve", "--http2", "--port", "0", "--auth-key",
            "ABC123DEFG:DEF123GHIJ:" + Fixtures.certs("AuthKey_ABC123DEFG.p8"), "--clock-skew", "7200",
        ])
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let port = String(listening.dropFirst("listening on 127.0.0.1:".count).prefix { $0.isNumber })
        let count = 200
        let lines = (1...count).map { index in
            #"{"token":"\#(String(repeating: "ab", count: 28) + String(format: "%08x", index))","payload":{"aps":{"alert":"\#(index)"}}}"#
        }
        let input = try scratch.write(Array((lines.joined(separator: "\n") + "\n").utf8), named: "in.jsonl")
        let result = try CLIRunner.runBinary([
            "send", "--http2", "--gateway", "127.0.0.1:\(port)", "--ca-file", Fixtures.certs("ca.pem"), "--auth-key",
            Fixtures.certs("AuthKey_ABC123DEFG.p8"), "--team-id", "DEF123GHIJ", "--topic", "com.example.legacy",
            "--input", input, "--json",
        ])
        #expect(result.status == 3, "\(result.stderr)")
        let errors = result.errorLines.filter { $0.hasPrefix("legacy-push: error:") }
        #expect(errors.count == 1, "\(result.stderr)")
        #expect(errors.first?.contains("this machine's clock is probably wrong") == true, "\(result.stderr)")
        #expect(errors.first?.contains("date -u") == true, "\(result.stderr)")
        let summary = try #require(result.outputLines.last, "\(result.output)")
        #expect(summary.contains(#""connections":1,"#), "\(summary)")
        #expect(summary.contains(#""rejected":1,"#), "\(summary)")
        #expect(summary.contains(#""notSent":\#(count - 1),"#), "\(summary)")
        #expect(server.interruptAndWait() == 0)
        let refused = server.stderr.split(separator: "\n").filter {
            $0.contains("ExpiredProviderToken") && !$0.contains("stopped: ")
        }
        #expect(refused.count == 1, "\(server.stderr)")
    }

    /// A production certificate against the default (development) `serve --http2`: both sides
    /// say which environment each is for and how to change it, instead of a bare
    /// 403 BadCertificateEnvironment.
    @Test func aCertificateForTheOtherEnvironmentSaysWhichSideIsWhichAndHowToChangeIt() throws {
        let server = try ChildProcess(["serve", "--http2", "--port", "0"])
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let address = String(listening.dropFirst("listening on ".count).prefix { $0 != " " })
        let result = try CLIRunner.runBinary([
            "send", "--http2", "--gateway", address, "--ca-file", Fixtures.certs("ca.pem"), "--cert",
            Fixtures.certs("production.p12"), "--passphrase-file", Fixtures.certs("passphrase.txt"), "--token",
            String(repeating: "ab", count: 32), "--alert", "hi",
        ])
        #expect(result.status == 3)
        let expected: String =
            "legacy-push: error: APNs refused the credentials: 403 BadCertificateEnvironment (every "
            + "notification would fail): the certificate is for production, and \(address) serves development "
            + "(the sandbox): start the simulator with 'serve --http2 --environment production', or use a "
            + "development certificate"
        #expect(result.errorLines.last == expected, "\(result.stderr)")
        #expect(server.interruptAndWait() == 0)
        let logged: String =
            "403 BadCertificateEnvironment token \(String(repeating: "ab", count: 32)): the client certificate is "
            + "for production, this server is development (Apple's sandbox): start serve --http2 with "
            + "--environment production for it, or the client uses a development (or universal) certificate"
        #expect(server.stderr.contains(logged), "\(server.stderr)")
    }

    /// 403 InvalidProviderToken: the simulator logs which check refused the token (unknown key
    /// id, a signature from another key, another team) and the sender says what to check.
    @Test func anInvalidProviderTokenSaysWhyOnBothSides() throws {
        let server = try ChildProcess([
            "serve", "--http2", "--port", "0", "--auth-key",
            "ABC123DEFG:DEF123GHIJ:" + Fixtures.certs("AuthKey_ABC123DEFG.p8"),
        ])
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let address = String(listening.dropFirst("listening on ".count).prefix { $0 != " " })
        let cases: [(key: String, keyID: String, teamID: String, logged: String)] = [
            (
                "AuthKey_ZYX987WVUT.p8", "ABC123DEFG", "DEF123GHIJ",
                "the signature does not verify with the key registered under key id ABC123DEFG"
            ),
            (
                "AuthKey_ABC123DEFG.p8", "ABC123DEFG", "AAAAAAAAAA",
                "the token's team id AAAAAAAAAA is not DEF123GHIJ, the team of key ABC123DEFG"
            ),
            (
                "AuthKey_ZYX987WVUT.p8", "ZYX987WVUT", "DEF123GHIJ",
                "no key is registered under the token's key id ZYX987WVUT (known: ABC123DEFG)"
            ),
        ]
        for test in cases {
            let result = try CLIRunner.runBinary([
                "send", "--http2", "--gateway", address, "--ca-file", Fixtures.certs("ca.pem"), "--auth-key",
                Fixtures.certs(test.key), "--key-id", test.keyID, "--team-id", test.teamID, "--topic",
                "com.example.legacy", "--token", String(repeating: "ab", count: 32), "--alert", "hi",
            ])
            #expect(result.status == 3)
            let hint: String =
                "403 InvalidProviderToken (every notification would fail): check that the .p8 key is the one "
                + "Apple registered under --key-id \(test.keyID), that --team-id \(test.teamID) is the team that "
                + "key belongs to, and that this machine's clock is right"
            #expect(result.stderr.contains(hint), "\(result.stderr)")
        }
        #expect(server.interruptAndWait() == 0)
        for test in cases {
            #expect(
                server.stderr.contains(
                    "403 InvalidProviderToken token \(String(repeating: "ab", count: 32)): \(test.logged)"),
                "\(server.stderr)")
        }
    }
}
