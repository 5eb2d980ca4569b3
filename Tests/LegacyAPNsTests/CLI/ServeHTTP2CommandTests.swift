import APNsCore
import Foundation
import TestSupport
import Testing

/// `legacy-push serve --http2`: the hook in `serve`, typed options and their errors, the record
/// written while serving, the closing line on SIGINT, and the help's examples.
@Suite struct ServeHTTP2CommandTests {
    @Test func serveHelpMentionsHTTP2AndServeHTTP2HasItsOwnHelp() async {
        let serve = await CLIRunner.run(["serve", "--help"])
        #expect(serve.status == 0)
        #expect(serve.output.contains("--http2"))
        let http2 = await CLIRunner.run(["serve", "--http2", "--help"])
        #expect(http2.status == 0)
        #expect(http2.output.contains("USAGE: legacy-push serve --http2 "))
        for option in [
            "--auth-key <keyid:teamid:path>", "--max-streams <n>", "--fail-token <hex[:reason]>",
            "--unregistered <hex[:milliseconds]>", "--goaway-after <n>", "--error-delay <seconds>",
            "--fail-every <n[:reason]>", "--record <path>", "--quiet", "--environment <development|production>",
            "--stall-token <hex>", "--reset-after <n>", "--shutdown-after <n>", "--random-faults <spec>",
            "(default: 2197)",
        ] {
            #expect(http2.output.contains(option), "\(option)")
        }
    }

    /// A new user finds HTTP/2 from the top: the tool's help names it, `help serve --http2`
    /// shows the variant's help, and its usage line names --http2 once.
    @Test func topLevelHelpNamesHTTP2AndHelpServeHTTP2ShowsTheVariantsHelp() throws {
        let root = try CLIRunner.runBinary(["--help"])
        #expect(root.status == 0)
        for phrase in ["HTTP/2", "'send --http2'", "'serve --http2'", "legacy-push help serve --http2"] {
            #expect(root.output.contains(phrase), "\(phrase)")
        }
        let help = try CLIRunner.runBinary(["help", "serve", "--http2"])
        #expect(help.status == 0, "\(help.stderr)")
        #expect(help.stderr.isEmpty)
        let direct = try CLIRunner.runBinary(["serve", "--http2", "--help"])
        #expect(help.output == direct.output)
        #expect(help.output.contains("USAGE: legacy-push serve --http2 [--cert <path>] "))
        #expect(!help.output.contains("[--http2]"))
    }

    @Test(arguments: [
        (["--fail-token", "xyz"], "--fail-token: token has 'x' at position 1, expected hex digits"),
        (
            ["--fail-token", String(repeating: "ab", count: 32) + ":BadDeviceTokn"],
            "--fail-token: 'BadDeviceTokn' is not one of Apple's reasons (BadDeviceToken, Unregistered, TooManyRequests, ServiceUnavailable, ...) (did you mean 'BadDeviceToken'?)"
        ),
        (["--fail-every", "0"], "--fail-every must be between 1 and \(Int.max), got 0"),
        (["--max-streams", "0"], "--max-streams must be between 1 and 100000, got 0"),
        (
            ["--auth-key", "ABC123DEFG:/tmp/key.p8"],
            "--auth-key expects KEYID:TEAMID:PATH, got 'ABC123DEFG:/tmp/key.p8'"
        ),
        (["--auth-key", "abc:DEF123GHIJ:/tmp/k.p8"], "--auth-key: key id 'abc' is not 10 characters A-Z and 0-9"),
        (["--environment", "sandbox"], "--environment must be one of development, production, got 'sandbox'"),
        (
            ["--random-faults", "seed=1,boom=0.5"],
            "--random-faults: unknown fault 'boom' (seed, goaway, reset, unavailable, stall, bad-token)"
        ),
        (["--random-faults", "reset=0.7,stall=0.7"], "--random-faults rates add up to 1.4, more than 1"),
        (
            ["--cert", "x.pem"],
            "give --cert (with --key unless it holds the key) and --ca-file together, or none of them"
        ),
        (["--frobnicate"], "unknown option '--frobnicate' for 'legacy-push serve --http2'"),
    ])
    func badOptionsAreUsageErrorsNamingTheOption(_ arguments: [String], _ message: String) async {
        let result = await CLIRunner.run(["serve", "--http2"] + arguments)
        #expect(result.status == 2)
        #expect(result.stderr == "legacy-push: error: \(message)\n")
        #expect(result.output.isEmpty)
    }

    @Test func aMissingKeyFileIsNamed() async {
        let result = await CLIRunner.run(["serve", "--http2", "--auth-key", "ABC123DEFG:DEF123GHIJ:/nonexistent.p8"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("/nonexistent.p8"))
    }

    @Test func recordsAreWrittenWhileServingAndSIGINTPrintsCountsPerReason() async throws {
        let scratch = try ScratchDirectory()
        let record = scratch.file("accepted.jsonl")
        let gone = String(repeating: "cd", count: 31) + "01"
        let server = try ChildProcess([
            "serve", "--http2", "--port", "0", "--record", record, "--unregistered", "\(gone):1700000000000",
        ])
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        #expect(listening.hasPrefix("listening on 127.0.0.1:") && listening.hasSuffix(" (HTTP/2)"))
        let port = String(listening.dropFirst("listening on 127.0.0.1:".count).prefix { $0.isNumber })
        let url = "https://127.0.0.1:\(port)/3/device/"
        let accepted = try Curl.run(
            Curl.universalPEM + [
                "-H", "apns-topic: com.example.legacy", "-H", "apns-push-type: alert", "-H", "apns-priority: 5",
                "--data-binary", #"{"aps":{"alert":"hi"}}"#, "-o", "/dev/null", "-w", "%{http_code} %header{apns-id}",
                url + ProviderFixture.hex,
            ])
        #expect(accepted.output.hasPrefix("200 "), "\(accepted.stderr)")
        let apnsID = String(accepted.output.dropFirst(4))
        let unregistered = try Curl.run(
            Curl.universalPEM + [
                "-H", "apns-topic: com.example.legacy", "--data-binary", "{}", "-w", " %{http_code}", url + gone,
            ])
        #expect(unregistered.output == #"{"reason":"Unregistered","timestamp":1700000000000} 410"#)
        // Written while serving: the line is there well before the server stops.
        var line: String?
        let deadline = Date().addingTimeInterval(5)
        while line == nil, Date() < deadline {
            line = (try? String(contentsOfFile: record, encoding: .utf8))?.split(separator: "\n").first.map(String.init)
            if line == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(
            line
                == #"{"token":"\#(ProviderFixture.hex)","topic":"com.example.legacy","pushType":"alert","priority":5,"expiration":null,"collapseId":null,"apnsId":"\#(apnsID)","payload":"{\"aps\":{\"alert\":\"hi\"}}"}"#
        )
        #expect(server.interruptAndWait() == 0)
        #expect(
            server.stderr.contains("stopped: 2 connections, 1 accepted, 1 rejected (Unregistered 1)"),
            "\(server.stderr)")
        #expect(server.stderr.contains("410 Unregistered (since 1700000000000 ms) token \(gone)"))
    }

    /// The help's examples are commands that run: each serve example starts and listens (the
    /// port is swapped for a free one; the one naming files we do not have is checked to fail
    /// on them), and the curl example gets a 200 from the first.
    @Test func theHelpExamplesRun() async throws {
        let help = await CLIRunner.run(["serve", "--http2", "--help"])
        let examples = help.output.components(separatedBy: "EXAMPLES:\n").last!.split(separator: "\n").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        #expect(examples.count == 4)
        let root = PythonTools.packageRoot
        let first = examples[0].split(separator: " ").dropFirst().map(String.init) + ["--port", "0"]
        let server = try ChildProcess(first, directory: root)
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let port = String(listening.dropFirst("listening on 127.0.0.1:".count).prefix { $0.isNumber })
        // The curl example, pointed at this port, from the package root.
        var curl = examples[3].replacingOccurrences(of: "2197", with: port)
        curl += " -s -o /dev/null -w '%{http_code}'"
        let result = try CLIRunner.runProcess(
            URL(fileURLWithPath: "/bin/sh"), ["-c", curl], directory: URL(fileURLWithPath: root))
        #expect(result.output == "200", "\(curl): \(result.stderr)")
        #expect(server.interruptAndWait() == 0)

        let scratch = try ScratchDirectory()
        let second = examples[1].split(separator: " ").dropFirst().map(String.init).map {
            $0 == "accepted.jsonl" ? scratch.file("accepted.jsonl") : $0
        }
        let faulty = try ChildProcess(second, directory: root)
        #expect(faulty.waitForLine { $0.hasPrefix("listening on ") } != nil, "\(faulty.stderr)")
        #expect(faulty.interruptAndWait() == 0)

        let third = await CLIRunner.run(examples[2].split(separator: " ").dropFirst().map(String.init))
        #expect(third.status == 2)
        #expect(third.stderr.contains("api.pem"))
    }
}
