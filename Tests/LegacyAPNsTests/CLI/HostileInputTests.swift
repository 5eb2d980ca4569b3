import Foundation
import TestSupport
import Testing

/// Every user mistake the hardening issue lists, through the real binary: exit 2 (3 for connection
/// or TLS failures), exactly one `legacy-push: error:` line naming the problem, no stack trace.
@Suite struct HostileInputTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var arguments: [String]
        var stdin: String = ""
        var status: Int32 = 2
        var phrase: String
        var testDescription: String { name }
    }

    static let certs = Fixtures.root + "/certs/"
    static let token = String(repeating: "ab", count: 32)
    static let connection = [
        "--gateway", "127.0.0.1:1", "--ca-file", certs + "ca.pem", "--cert", certs + "universal-modern.p12",
        "--passphrase-file", certs + "passphrase.txt", "--retries", "1",
    ]
    static let feedback = [
        "--feedback", "127.0.0.1:1", "--ca-file", certs + "ca.pem", "--cert", certs + "universal-modern.p12",
        "--passphrase-file", certs + "passphrase.txt",
    ]

    static let cases: [Case] = [
        // Tokens and payloads.
        Case(
            name: "non-hex token",
            arguments: ["send", "--token", "7g" + token.dropFirst(2), "--alert", "a"] + connection,
            phrase: "token has 'g' at position 2, expected hex digits"),
        Case(
            name: "token too short",
            arguments: ["send", "--token", String(token.dropFirst(2)), "--alert", "a"] + connection,
            phrase: "token has 31 bytes, expected 32 (64 hex digits) in enhanced frames"),
        Case(
            name: "token with odd digits", arguments: ["send", "--token", token + "a", "--alert", "a"] + connection,
            phrase: "token has 65 hex digits, expected 64 (32 bytes)"),
        Case(
            name: "invalid payload JSON", arguments: ["send", "--token", token, "--payload", "{'a':1}"] + connection,
            phrase: "payload is not valid JSON"),
        Case(
            name: "oversize payload",
            arguments: ["send", "--token", token, "--payload", "[\"" + String(repeating: "x", count: 3000) + "\"]"]
                + connection,
            phrase: "payload has 3004 bytes, the limit is 2048"),
        Case(
            name: "oversize payload for an old gateway",
            arguments: [
                "send", "--token", token, "--payload", "[\"" + String(repeating: "x", count: 300) + "\"]",
                "--max-payload", "256",
            ] + connection,
            phrase: "payload has 304 bytes, the limit is 256"),
        // JSON Lines.
        Case(
            name: "malformed JSON Lines", arguments: ["send", "--input", "-"] + connection,
            stdin: "{\"token\":\"\(token)\",\"payload\":{}}\n\n{\"token\":\"\(token)\",\"payload\":{}\n",
            phrase: "line 3: invalid JSON"),
        Case(
            name: "JSON Lines with a bad token", arguments: ["send", "--input", "-"] + connection,
            stdin: "{\"token\":\"\(token)\",\"payload\":{}}\n{\"token\":\"abc\",\"payload\":{}}\n",
            phrase: "line 2: token has 3 hex digits, expected 64 (32 bytes)"),
        Case(
            name: "JSON Lines that are not objects", arguments: ["send", "--input", "-"] + connection,
            stdin: "[1,2,3]\n", phrase: "line 1: expected a JSON object"),
        Case(
            name: "binary garbage as JSON Lines", arguments: ["send", "--input", "-"] + connection,
            stdin: "\u{0}\u{1}\u{2}\u{FF}", phrase: "line 1: expected a JSON object"),
        // Files.
        Case(
            name: "missing input file", arguments: ["send", "--input", "/nonexistent/batch.jsonl"] + connection,
            phrase: "cannot read '/nonexistent/batch.jsonl': No such file or directory"),
        Case(
            name: "a directory as input", arguments: ["send", "--input", "/tmp"] + connection,
            phrase: "cannot read '/tmp': it is a directory"),
        Case(
            name: "missing certificate",
            arguments: [
                "send", "--token", token, "--alert", "a", "--cert", "/nonexistent.p12", "--gateway", "127.0.0.1:1",
            ],
            phrase: "cannot read '/nonexistent.p12'"),
        Case(name: "corrupt .p12", arguments: ["inspect", certs + "passphrase.txt"], phrase: "passphrase.txt"),
        Case(
            name: "missing CA file",
            arguments: [
                "send", "--token", token, "--alert", "a", "--cert", certs + "universal-modern.p12", "--passphrase-file",
                certs + "passphrase.txt", "--ca-file", "/nonexistent.pem", "--gateway", "127.0.0.1:1",
            ],
            phrase: "cannot read '/nonexistent.pem'"),
        // Passphrases.
        Case(
            name: "wrong passphrase",
            arguments: ["inspect", certs + "universal-legacy.p12", "--passphrase-env", "HOME"],
            phrase: "wrong passphrase"),
        Case(
            name: "unset passphrase variable",
            arguments: ["inspect", certs + "universal-legacy.p12", "--passphrase-env", "LEGACY_PUSH_UNSET_VARIABLE"],
            phrase: "environment variable 'LEGACY_PUSH_UNSET_VARIABLE' (from --passphrase-env) is not set"),
        Case(
            name: "key that does not match",
            arguments: [
                "convert", certs + "universal.pem", "--key", certs + "other.key", "--out", "/tmp/never-written.p12",
                "--to", "p12",
            ],
            phrase: "does not match"),
        // Flags, subcommands, numbers.
        Case(
            name: "unknown flag", arguments: ["send", "--tokens", token],
            phrase: "unknown option '--tokens' for 'legacy-push send' (did you mean '--token'?)"),
        Case(
            name: "unknown subcommand", arguments: ["sned"],
            phrase: "unknown subcommand 'sned' for 'legacy-push' (did you mean 'send'?)"),
        Case(name: "flag without its value", arguments: ["send", "--token"], phrase: "--token needs a value (hex)"),
        Case(
            name: "priority 7", arguments: ["send", "--token", token, "--alert", "a", "--priority", "7"] + connection,
            phrase: "priority must be 10 (immediate) or 5 (conserve power), not 7"),
        Case(
            name: "negative badge", arguments: ["send", "--token", token, "--badge", "-3"] + connection,
            phrase: "--badge must be between 0 and 2147483647, got -3"),
        Case(
            name: "identifier out of range",
            arguments: ["send", "--token", token, "--alert", "a", "--id", "4294967296"] + connection,
            phrase: "--id must be between 0 and 4294967295, got 4294967296"),
        Case(
            name: "zero connections",
            arguments: ["send", "--token", token, "--alert", "a", "--connections", "0"] + connection,
            phrase: "--connections must be between 1 and 64, got 0"),
        Case(
            name: "bad gateway address",
            arguments: ["send", "--token", token, "--alert", "a", "--gateway", "localhost"],
            phrase: "--gateway needs a port: HOST:PORT, e.g. localhost:2195"),
        Case(name: "negative interval", arguments: ["feedback", "--interval", "-1"] + feedback, phrase: "--interval"),
        Case(name: "zero interval", arguments: ["feedback", "--interval", "0"] + feedback, phrase: "--interval"),
        Case(
            name: "non-numeric interval", arguments: ["feedback", "--interval", "daily"] + feedback,
            phrase: "--interval"),
        Case(
            name: "port out of range", arguments: ["serve", "--port", "99999"],
            phrase: "--port must be between 0 and 65535, got 99999"),
        Case(
            name: "fail-every that is not a number", arguments: ["serve", "--fail-every", "often"],
            phrase: "--fail-every expects a whole number, got 'often'"),
        // Frames.
        Case(
            name: "truncated frame file",
            arguments: ["frame", "decode", Fixtures.root + "/frames/truncated-enhanced.bin"],
            phrase: "stream ends inside a frame"),
        Case(
            name: "random bytes as frames", arguments: ["frame", "decode", "-"], stdin: "\u{7}random bytes, not frames",
            phrase: "unknown command byte 7 (status 128, protocol error)"),
        // Connections and TLS: exit 3.
        Case(
            name: "nothing listening", arguments: ["send", "--token", token, "--alert", "a"] + connection, status: 3,
            phrase: "cannot connect to 127.0.0.1:1"),
        Case(
            name: "nothing listening for feedback", arguments: ["feedback"] + feedback, status: 3, phrase: "127.0.0.1:1"
        ),
        Case(
            name: "unresolvable gateway",
            arguments: [
                "send", "--token", token, "--alert", "a", "--gateway", "no-such-host.invalid:2195", "--ca-file",
                certs + "ca.pem", "--cert", certs + "universal-modern.p12", "--passphrase-file",
                certs + "passphrase.txt", "--retries", "1",
            ],
            status: 3, phrase: "cannot resolve no-such-host.invalid"),
    ]

    @Test(arguments: cases)
    func hostileInputIsOneErrorLine(_ hostile: Case) throws {
        let result = try CLIRunner.runBinary(hostile.arguments, stdin: Array(hostile.stdin.utf8))
        #expect(result.status == hostile.status, "\(result.stderr)")
        let lines = result.errorLines
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(lines.first?.hasPrefix("legacy-push: error: ") == true, "\(result.stderr)")
        #expect(result.stderr.contains(hostile.phrase), "\(result.stderr)")
        #expect(!result.stderr.contains("Fatal error") && !result.stderr.contains("Backtrace"))
    }
}
