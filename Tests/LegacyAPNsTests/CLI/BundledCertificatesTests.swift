import CommandLineKit
import FeedbackClient
import Foundation
import GatewaySimulator
import LegacyAPNs
import ProcessHarness
import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyPushCLI

/// Issue #14: `demo` and `serve` work from any directory, with the binary anywhere.
@Suite struct BundledCertificatesTests {
    static let certs = Fixtures.root + "/certs"
    static let checkout = String(Fixtures.root.dropLast("/Fixtures".count))

    @Test func theEnvironmentVariableWinsAndMustNameAFolderOfCertificates() throws {
        let found = try BundledCertificates.locate(
            environment: Self.certs, executable: nil, currentDirectory: nil, for: "demo")
        #expect(found == .init(path: Self.certs, source: .environment))
        let error = try #require(throws: CLIError.self) {
            try BundledCertificates.locate(
                environment: "/nonexistent", executable: nil, currentDirectory: nil, for: "demo")
        }
        #expect(error.message.hasPrefix("LEGACY_PUSH_FIXTURES='/nonexistent' is not a folder of test certificates"))
    }

    @Test func theCheckoutIsFoundNextToTheBinaryOrFromTheCurrentDirectory() throws {
        let besideBinary = try BundledCertificates.locate(
            environment: nil, executable: Self.checkout + "/.build/x86_64-unknown-linux-gnu/debug/legacy-push",
            currentDirectory: "/", for: "demo")
        #expect(besideBinary == .init(path: Self.certs, source: .nextToExecutable))
        let fromSubfolder = try BundledCertificates.locate(
            environment: "", executable: "/usr/local/bin/legacy-push", currentDirectory: Self.checkout + "/Sources",
            for: "serve")
        #expect(fromSubfolder == .init(path: Self.certs, source: .currentCheckout))
    }

    @Test func throwawayCertificatesLookLikeThePushFixtures() throws {
        let set = try ThrowawayCertificates.generate(now: Int64(time(nil)))
        #expect(set.certificateAuthority.isCertificateAuthority)
        #expect(!set.server.certificate.isCertificateAuthority)
        let summary = CertificateSummary(
            certificate: set.client.certificate, privateKey: set.client.privateKey, chain: set.client.chain,
            now: Int64(time(nil)))
        #expect(summary.topic == "com.example.legacy")
        #expect(summary.teamID == "TEAM123456")
        #expect(summary.environment == .both)
        #expect(
            summary.pushTopics.map(\.description) == [
                "com.example.legacy (app)", "com.example.legacy.voip (voip)",
                "com.example.legacy.complication (complication)",
            ])
        #expect(summary.keyMatches == true)
        #expect(summary.daysLeft == 29 || summary.daysLeft == 30)
        #expect(summary.key.bits == 2048)
        #expect(set.client.chain == [set.certificateAuthority])
    }

    @Test(.timeLimit(.minutes(1)))
    func throwawayCertificatesCarryARealSendAndFeedbackRead() async throws {
        let set = try ThrowawayCertificates.generate(now: Int64(time(nil)))
        var configuration = GatewaySimulator.Configuration(
            identity: set.server, clientTrust: [set.certificateAuthority])
        configuration.port = 0
        configuration.feedbackPort = 0
        configuration.feedback = FeedbackSamples.records(2)
        let simulator = try GatewaySimulator(configuration: configuration)
        try await simulator.withRunning { endpoints in
            let tls = TLSConfiguration(identity: set.client, trust: .certificates([set.certificateAuthority]))
            var client = PushClient.Configuration(gateway: Gateway(endpoints.gateway), tls: tls)
            client.idleConfirmationDelay = .milliseconds(50)
            let report = try await PushClient(configuration: client).send([
                PushNotification(
                    token: try DeviceToken(hexString: String(repeating: "ab", count: 32)),
                    payload: try PayloadBuilder(alert: "hi").build())
            ])
            #expect(report.isCompleteSuccess, "\(report)")
            let feedback = try await FeedbackReader(
                configuration: .init(service: FeedbackService(endpoints.feedback!), tls: tls)
            ).read()
            #expect(feedback.records.count == 2, "\(feedback)")
        }
    }

    /// The binary copied out of the checkout and run from an empty folder: the demo generates its
    /// certificates into $TMPDIR and removes them afterwards.
    @Test(.timeLimit(.minutes(1)))
    func aCopiedBinaryRunsTheDemoFromAnEmptyFolder() throws {
        let scratch = try ScratchDirectory()
        for folder in ["bin", "elsewhere", "tmp"] {
            try FileManager.default.createDirectory(atPath: scratch.file(folder), withIntermediateDirectories: true)
        }
        let copy = scratch.file("bin/legacy-push")
        try FileManager.default.copyItem(atPath: CLIRunner.binary.path, toPath: copy)
        let result = try CLIRunner.runProcess(
            URL(fileURLWithPath: copy), ["demo"],
            environment: ["TMPDIR": scratch.file("tmp"), "LEGACY_PUSH_FIXTURES": ""],
            directory: URL(fileURLWithPath: scratch.file("elsewhere")))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.output.contains(
                "(No Fixtures/certs found: using a throwaway test CA and certificates generated in \(scratch.file("tmp"))/legacy-push-certs-"
            ))
        #expect(result.output.contains("Done: every notification has a verdict"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.file("tmp")).isEmpty)

        let help = try CLIRunner.runProcess(URL(fileURLWithPath: copy), ["help", "demo"])
        #expect(help.output.contains("ENVIRONMENT:"))
        #expect(help.output.contains("LEGACY_PUSH_FIXTURES"))
        #expect(!help.output.contains("--cert"))
    }

    @Test(.timeLimit(.minutes(1)))
    func aCopiedBinaryServesWithGeneratedCertificatesItsClientsCanUse() async throws {
        let scratch = try ScratchDirectory()
        try FileManager.default.createDirectory(atPath: scratch.file("tmp"), withIntermediateDirectories: true)
        let copy = scratch.file("legacy-push")
        try FileManager.default.copyItem(atPath: CLIRunner.binary.path, toPath: copy)
        let child = try SpawnedProcess(
            copy, ["serve", "--port", "0", "--feedback-port", "0"],
            environment: ["TMPDIR": scratch.file("tmp"), "LEGACY_PUSH_FIXTURES": ""], directory: scratch.path)
        defer {
            child.send(SIGINT)
            _ = child.waitForExit(timeout: 20)
        }
        _ = child.wait(timeout: 20) { out, _, _ in
            let text = String(decoding: out, as: UTF8.self)
            return text.contains("feedback on ") && text.hasSuffix("\n")
        }
        let text = String(decoding: child.standardOutput, as: UTF8.self)
        let feedbackLine = try #require(text.split(separator: "\n").first { $0.hasPrefix("feedback on ") })
        let generated = try #require(
            try FileManager.default.contentsOfDirectory(atPath: scratch.file("tmp")).first {
                $0.hasPrefix("legacy-push-certs-")
            })
        let folder = scratch.file("tmp/" + generated)
        #expect(CredentialsCLI.mode(folder + "/server.key") == 0o600)
        let read = await CLIRunner.run([
            "feedback", "--feedback", String(feedbackLine.dropFirst("feedback on ".count)), "--ca-file",
            folder + "/ca.pem", "--cert", folder + "/universal-modern.p12", "--passphrase-file",
            folder + "/passphrase.txt",
        ])
        #expect(read.status == 0, "\(read.stderr)")
        #expect(read.stderr == "0 tuples\n")
    }
}
