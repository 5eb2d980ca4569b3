import Foundation
import LegacyAPNs
import TestSupport
import Testing

@testable import LegacyPushCLI

@Suite struct FrameCommandTests {
    @Test(arguments: FrameFixtures.notifications)
    func encodeWritesTheFixtureBytes(_ fixture: FrameFixtures.Entry) async throws {
        var arguments = [
            "frame", "encode", "--token", fixture.fields["token"]!.string!, "--payload",
            fixture.fields["payload"]!.string!,
        ]
        switch fixture.format {
        case .simple: arguments += ["--format", "simple"]
        case .enhanced: arguments += ["--format", "enhanced"]
        case .itemized: arguments += ["--format", "frame"]
        }
        if let id = fixture.int("id") { arguments += ["--id", String(id)] }
        if let expiry = fixture.int("expiry") { arguments += ["--expiry", String(expiry)] }
        if let priority = fixture.int("priority") { arguments += ["--priority", String(priority)] }
        let result = await CLIRunner.run(arguments)
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        #expect(result.stdout == fixture.bin)
    }

    @Test(arguments: FrameFixtures.notifications + FrameFixtures.errorResponses)
    func decodeJSONPrintsTheContractShape(_ fixture: FrameFixtures.Entry) throws {
        let result = try CLIRunner.runBinary(["frame", "decode", "--json", "-"], stdin: fixture.bin)
        #expect(result.status == 0)
        #expect(result.outputLines.count == 1)
        let object = try JSONSerialization.jsonObject(with: Data(result.outputLines[0].utf8)) as! [String: Any]
        if fixture.kind == "error-response" {
            #expect(Set(object.keys) == ["command", "status", "id"])
            #expect(object["command"] as? Int == 8)
            #expect(object["status"] as? Int == fixture.int("status"))
            #expect(object["id"] as? Int == fixture.int("id"))
            return
        }
        #expect(Set(object.keys) == ["command", "id", "expiry", "token", "payload", "priority"])
        #expect(object["command"] as? Int == Int(fixture.format.command.rawValue))
        #expect(object["token"] as? String == fixture.fields["token"]!.string)
        #expect(object["payload"] as? String == fixture.fields["payload"]!.string)
        for key in ["id", "expiry", "priority"] {
            if let value = fixture.int(key) {
                #expect(object[key] as? Int == value, "\(key)")
            } else {
                #expect(object[key] is NSNull, "\(key) should be null")
            }
        }
    }

    @Test func truncatedStreamPrintsGoodFramesThenOneErrorAndExits2() throws {
        let fixture = FrameFixtures.malformed.first { $0.name == "truncated-enhanced" }!
        let result = try CLIRunner.runBinary(["frame", "decode", "--json"], stdin: fixture.bin)
        #expect(result.status == 2)
        #expect(result.outputLines.count == 1)
        #expect(result.errorLines.count == 1)
        #expect(result.stderr.hasPrefix("legacy-push: error: frame 2 at byte 70: byte 101: stream ends inside a frame"))
        #expect(result.stderr.contains("status 128"))
    }

    @Test(arguments: FrameFixtures.malformed)
    func malformedFixturesExit2NamingOffsetAndStatus(_ fixture: FrameFixtures.Entry) async throws {
        let path = FrameFixtures.directory.appendingPathComponent(fixture.name + ".bin").path
        let result = await CLIRunner.run(["frame", "decode", path])
        #expect(result.status == 2)
        #expect(result.outputLines.count == fixture.int("framesBefore"))
        #expect(result.errorLines.count == 1)
        #expect(result.stderr.contains("byte \(fixture.int("offset")!):"))
        #expect(result.stderr.contains("(status \(fixture.int("status")!),"))
    }

    @Test(arguments: [
        (["frame", "encode", "--token", "xyz", "--payload", "{}"], "token has 'x' at position 1, expected hex digits"),
        (
            ["frame", "encode", "--token", String(repeating: "ab", count: 31), "--payload", "{}"],
            "token has 31 bytes, expected 32 (64 hex digits) in enhanced frames"
        ),
        (
            ["frame", "encode", "--token", String(repeating: "a", count: 63), "--payload", "{}"],
            "token has 63 hex digits, expected 64 (32 bytes)"
        ),
        (
            ["frame", "encode", "--token", String(repeating: "ab", count: 32), "--payload", "{"],
            "payload is not valid JSON: unexpected end of JSON in an object at byte 1"
        ),
        (
            [
                "frame", "encode", "--token", String(repeating: "ab", count: 32), "--payload", "{}", "--format",
                "frame",
                "--priority", "7",
            ], "priority must be 10 (immediate) or 5 (conserve power), not 7"
        ),
        (
            ["frame", "encode", "--token", String(repeating: "ab", count: 32), "--payload", "{}", "--priority", "10"],
            "--priority needs --format frame (only item frames carry a priority)"
        ),
        (
            ["frame", "encode", "--token", String(repeating: "ab", count: 32), "--payload", "{}", "--id", "-1"],
            "--id must be between 0 and 4294967295, got -1"
        ),
        (
            ["frame", "encode", "--token", String(repeating: "ab", count: 32), "--payload", "{}", "--id", "x"],
            "--id expects a whole number, got 'x'"
        ),
        (["frame", "encode", "--token", String(repeating: "ab", count: 32)], "missing --payload or --payload-file"),
        (
            ["frame", "encode", "--tokn", "ab"],
            "unknown option '--tokn' for 'legacy-push frame encode' (did you mean '--token'?)"
        ),
        (
            [
                "frame", "encode", "--token", String(repeating: "ab", count: 32), "--payload-file",
                "/nonexistent/p.json",
            ],
            "cannot read '/nonexistent/p.json': No such file or directory"
        ),
        (["frame", "decode", "/nonexistent.bin"], "cannot read '/nonexistent.bin': No such file or directory"),
        (["frame", "explode"], "unknown subcommand 'explode' for 'legacy-push frame'"),
        (["frame", "decode", "a", "b"], "unexpected argument 'b' for 'legacy-push frame decode'"),
        (["frame", "encode", "--format", "binary"], "--format must be one of simple, enhanced, frame, got 'binary'"),
    ])
    func badInputIsOneErrorLineAndExit2(_ arguments: [String], _ message: String) async {
        let result = await CLIRunner.run(arguments)
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "legacy-push: error: \(message)\n")
    }

    @Test func oversizePayloadNeedsAHigherLimit() async {
        let payload = #"{"a":""# + String(repeating: "x", count: 2100) + #""}"#
        let token = String(repeating: "ab", count: 32)
        let refused = await CLIRunner.run(["frame", "encode", "--token", token, "--payload", payload])
        #expect(refused.status == 2)
        #expect(refused.stderr == "legacy-push: error: payload has 2108 bytes, the limit is 2048\n")
        let allowed = await CLIRunner.run([
            "frame", "encode", "--token", token, "--payload", payload, "--max-payload", "4096",
        ])
        #expect(allowed.status == 0)
        #expect(allowed.stdout.count == 45 + 2108)
    }

    @Test func helpIsAvailableForEveryLevel() async {
        for arguments in [
            ["--help"], ["frame", "--help"], ["frame", "encode", "--help"], ["help", "frame", "decode"],
        ] {
            let result = await CLIRunner.run(arguments)
            #expect(result.status == 0)
            #expect(result.output.hasPrefix("OVERVIEW: "))
            #expect(result.output.contains("USAGE: legacy-push"))
            #expect(result.output.contains("-h, --help"))
        }
        let version = await CLIRunner.run(["--version"])
        #expect(version.output == "legacy-push \(LegacyPush.version)\n")
    }
}
