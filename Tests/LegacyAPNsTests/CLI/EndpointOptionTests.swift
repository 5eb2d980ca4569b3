import Foundation
import TestSupport
import Testing

/// Every HOST:PORT option (`send --gateway`, `feedback --feedback`, `bridge --upstream`) goes
/// through the one endpoint parser: a URL, a port over 65535 or a missing port is refused at once
/// with one line saying why, before anything connects or retries.
@Suite struct EndpointOptionTests {
    static let token = String(repeating: "ab", count: 32)

    @Test(arguments: [
        (
            ["send", "--token", token, "--alert", "hi", "--gateway", "https://127.0.0.1:2195"],
            "--gateway takes HOST:PORT, not a URL: drop 'https://'"
        ),
        (
            ["send", "--http2", "--token", token, "--alert", "hi", "--gateway", "https://api.push.apple.com:443"],
            "--gateway takes HOST:PORT, not a URL: drop 'https://'"
        ),
        (
            ["send", "--token", token, "--alert", "hi", "--gateway", "127.0.0.1:70000"],
            "--gateway: port 70000 is over 65535"
        ),
        (
            ["send", "--token", token, "--alert", "hi", "--gateway", "gateway.example.com"],
            "--gateway needs a port: HOST:PORT, e.g. gateway.example.com:2195"
        ),
        (
            ["send", "--token", token, "--alert", "hi", "--gateway", "127.0.0.1:port"],
            "--gateway: port 'port' is not a number from 1 to 65535"
        ),
        (["feedback", "--feedback", "http://127.0.0.1:2196"], "--feedback takes HOST:PORT, not a URL: drop 'http://'"),
        (["feedback", "--feedback", "localhost"], "--feedback needs a port: HOST:PORT, e.g. localhost:2196"),
        (["feedback", "--feedback", "localhost:99999"], "--feedback: port 99999 is over 65535"),
        (
            ["bridge", "--upstream", "api.push.apple.com"],
            "--upstream needs a port: HOST:PORT, e.g. api.push.apple.com:443"
        ),
        (
            ["bridge", "--upstream", "https://api.push.apple.com"],
            "--upstream takes HOST:PORT, not a URL: drop 'https://'"
        ),
    ])
    func aBadAddressIsOneUsageErrorSayingWhy(_ arguments: [String], _ message: String) throws {
        let result = try CLIRunner.runBinary(arguments)
        #expect(result.status == 2)
        #expect(result.stderr == "legacy-push: error: \(message)\n")
        #expect(result.output.isEmpty)
    }
}
