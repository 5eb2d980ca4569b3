import Foundation
import TestSupport
import Testing

/// A client certificate the server refuses, with TLS 1.3: the refusal (an alert) arrives after
/// the handshake, on the first read, once notifications may already be written. Nothing was
/// delivered, so they are *not sent* (never "unconfirmed", which would have a script send them
/// twice), exit 3, and one error line names the certificate and the server.
@Suite struct RefusedCertificateTests {
    static let count = 2_000

    static func input(_ scratch: ScratchDirectory) throws -> String {
        let lines = (1...count).map { index in
            #"{"token":"\#(String(repeating: "ab", count: 28) + String(format: "%08x", index))","payload":{"aps":{"alert":"\#(index)"}}}"#
        }
        return try scratch.write(Array((lines.joined(separator: "\n") + "\n").utf8), named: "in.jsonl")
    }

    @Test(arguments: [["serve", "--tls-max", "1.3", "--feedback-port", "0"], ["serve", "--http2"]])
    func aRefusedCertificateIsNotSentAndNamed(_ server: [String]) throws {
        let scratch = try ScratchDirectory()
        let simulator = try ChildProcess(server + ["--port", "0", "--quiet"])
        defer { _ = simulator.interruptAndWait() }
        let listening = try #require(
            simulator.waitForLine { $0.hasPrefix("listening on ") }, "\(simulator.stderr)")
        let address = String(listening.dropFirst("listening on ".count).prefix { $0 != " " })
        let http2 = server.contains("--http2") ? ["--http2"] : []
        let result = try CLIRunner.runBinary(
            ["send"] + http2 + [
                "--gateway", address, "--ca-file", Fixtures.certs("ca.pem"), "--cert", Fixtures.certs("untrusted.p12"),
                "--passphrase-file", Fixtures.certs("passphrase.txt"), "--input", try Self.input(scratch), "--json",
            ])
        #expect(result.status == 3, "\(result.stderr)")
        let errors = result.errorLines.filter { $0.hasPrefix("legacy-push: error:") }
        #expect(
            errors == [
                "legacy-push: error: \(address) refused the client certificate 'Apple Push Services: "
                    + "com.example.legacy' (issued by 'Untrusted Test CA'): its issuer is unknown to the gateway"
            ], "\(result.stderr)")
        let summary = try #require(result.outputLines.last, "\(result.output)")
        #expect(summary.contains(#""accepted":0,"#), "\(summary)")
        #expect(summary.contains(#""unconfirmed":0,"#), "\(summary)")
        #expect(summary.contains(#""notSent":\#(Self.count)"#), "\(summary)")
        #expect(summary.contains(#""possibleDuplicates":0"#), "\(summary)")
    }
}
