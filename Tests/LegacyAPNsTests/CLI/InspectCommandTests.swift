import Foundation
import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs
@testable import LegacyPushCLI

@Suite struct InspectCommandTests {
    let passphraseFile = Fixtures.certs("passphrase.txt")

    @Test func summarisesALegacyP12() async {
        let run = await CredentialsCLI.run([
            "inspect", Fixtures.certs("universal-legacy.p12"), "--passphrase-file", passphraseFile, "--now",
            "1800000000",
        ])
        #expect(run.status == 0)
        #expect(run.error == "")
        let lines = run.output.split(separator: "\n")
        #expect(lines.contains("Topic        com.example.legacy"))
        #expect(lines.contains("Topics       com.example.legacy (app)"))
        #expect(lines.contains("             com.example.legacy.voip (voip)"))
        #expect(lines.contains("Environment  both (production and sandbox)"))
        #expect(lines.contains("Key          RSA 2048-bit, private key matches"))
        #expect(lines.contains("Format       PKCS#12"))
        #expect(lines.contains { $0.hasPrefix("Valid until  2126-11-05T16:24:04Z (") })
    }

    @Test func jsonCarriesTheContractFields() async throws {
        let run = await CredentialsCLI.run([
            "inspect", Fixtures.certs("development.p12"), "--passphrase-file", passphraseFile, "--json",
        ])
        #expect(run.status == 0)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        #expect(object["topic"] as? String == "com.example.legacy")
        #expect(object["topics"] as? [String] == ["com.example.legacy"])
        #expect(object["environment"] as? String == "development")
        #expect(object["keyMatches"] as? Bool == true)
        #expect(object["notAfter"] as? String == "2126-11-05T16:24:04Z")
        for key in ["subject", "issuer", "notBefore", "daysLeft"] { #expect(object[key] != nil, "\(key)") }
        #expect(run.output.hasSuffix("}\n"))
        #expect(run.output.split(separator: "\n").count == 1)
    }

    @Test func aCerHasNoKeyToMatch() async {
        let run = await CredentialsCLI.run(["inspect", Fixtures.certs("universal.cer"), "--json"])
        #expect(run.status == 0)
        #expect(run.output.contains(#""keyMatches":null"#))
    }

    @Test func expiredCertificatesExitOneAfterTheSummary() async {
        let run = await CredentialsCLI.run([
            "inspect", Fixtures.certs("expired.p12"), "--passphrase-file", passphraseFile, "--now", "1800000000",
        ])
        #expect(run.status == 1)
        #expect(run.output.contains("Valid until  2020-01-01T00:00:00Z (EXPIRED 2571 days ago)"))
        // Issue #14: "expired", not a warning.
        #expect(
            run.error
                == "legacy-push: expired: the certificate expired on 2020-01-01T00:00:00Z (2571 days ago); gateways "
                + "refuse it: renew it\n")
        #expect(!run.error.contains("warning"))
        let json = await CredentialsCLI.run([
            "inspect", Fixtures.certs("expired.pem"), "--json", "--now", "1800000000",
        ])
        #expect(json.status == 1)
        #expect(json.output.contains(#""expired":true"#))
    }

    @Test(arguments: [(20, "certificate expires in 20 days"), (1, "certificate expires in 1 day")])
    func warnsWhenFewerThanThirtyDaysRemain(days: Int64, message: String) async throws {
        let certificate = try Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("universal.pem")))
        let now = certificate.notAfter - days * 86400
        let run = await CredentialsCLI.run(["inspect", Fixtures.certs("universal.pem"), "--now", "\(now)"])
        #expect(run.status == 0)
        #expect(run.error == "legacy-push: warning: \(message) (2126-11-05T16:24:04Z)\n")
        let quiet = await CredentialsCLI.run([
            "inspect", Fixtures.certs("universal.pem"), "--now", "\(now - 30 * 86400)",
        ])
        #expect(quiet.error == "")
    }

    @Test func mismatchPrintsTheSummaryThenOneError() async {
        let run = await CredentialsCLI.run([
            "inspect", Fixtures.certs("universal.pem"), "--key", Fixtures.certs("other.key"), "--json",
        ])
        #expect(run.status == 2)
        #expect(run.output.contains(#""keyMatches":false"#))
        #expect(run.errorLines.count == 1)
        #expect(run.error.split(separator: "\n").count == 1)
        #expect(run.error.contains("does not match the certificate"))
    }

    @Test(arguments: [
        "wrong passphrase", "corrupt file", "truncated p12", "missing file", "missing key file", "directory",
    ])
    func inputErrorsExitTwoWithOneErrorLine(problem: String) async throws {
        let scratch = try ScratchDirectory()
        let wrong = try scratch.write(Array("not-the-passphrase\n".utf8), named: "wrong.txt")
        let garbage = try scratch.write(Array("this is not a certificate\n".utf8), named: "garbage.p12")
        let truncated = try scratch.write(
            Array(Fixtures.bytes(Fixtures.certs("universal-legacy.p12")).prefix(1000)), named: "truncated.p12")
        let arguments: [String]
        let expected: String
        switch problem {
        case "wrong passphrase":
            arguments = [Fixtures.certs("universal-legacy.p12"), "--passphrase-file", wrong]
            expected = "wrong passphrase for the PKCS#12 file"
        case "corrupt file":
            arguments = [garbage]
            expected = "not a certificate or PKCS#12 file"
        case "truncated p12":
            arguments = [truncated, "--passphrase-file", passphraseFile]
            expected = "not a PKCS#12 file: "
        case "missing file":
            arguments = [scratch.file("nope.p12")]
            expected = "No such file or directory"
        case "missing key file":
            arguments = [Fixtures.certs("universal.pem"), "--key", scratch.file("nope.key")]
            expected = "No such file or directory"
        default:
            arguments = [scratch.path]
            expected = "is a directory"
        }
        let run = await CredentialsCLI.run(["inspect"] + arguments)
        #expect(run.status == 2)
        #expect(run.output == "")
        #expect(run.errorLines.count == 1)
        #expect(run.error.split(separator: "\n").count == 1)
        #expect(run.error.contains(expected), "\(run.error)")
        #expect(!run.error.contains("not-the-passphrase"))
    }

    @Test func helpListsOptionsAndExamples() async {
        let run = await CredentialsCLI.run(["inspect", "--help"])
        #expect(run.status == 0)
        for text in ["USAGE: legacy-push inspect", "--passphrase-file <path>", "--json", "--key <path>", "EXAMPLES:"] {
            #expect(run.output.contains(text), "\(text)")
        }
    }
}

/// Issue #14: the leaf of a bundle is the provider certificate, and text and JSON tell one story.
@Suite struct InspectLeafTests {
    @Test func aBundleWithTheCAFirstIsSummarisedByItsProviderCertificate() async throws {
        let scratch = try ScratchDirectory()
        let bundle = try scratch.write(
            Fixtures.bytes(Fixtures.certs("chain.pem")) + Fixtures.bytes(Fixtures.certs("universal.pem")),
            named: "bundle.pem")
        let run = await CredentialsCLI.run(["inspect", bundle])
        #expect(run.status == 0, "\(run.error)")
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(lines.contains("Team ID      TEAM123456"))
        #expect(lines.contains("Topic        com.example.legacy"))
        #expect(lines.filter { $0.contains("Worldwide Developer Relations CA") && $0.hasPrefix("Subject") }.isEmpty)
        let chain = lines.drop { !$0.hasPrefix("Chain") }.prefix { $0.hasPrefix("Chain") || $0.hasPrefix(" ") }
        #expect(chain.count == 2)
        #expect(chain.contains { $0.contains("LegacyAPNs Test Root CA") })

        let json = await CredentialsCLI.run(["inspect", bundle, "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect(object["teamID"] as? String == "TEAM123456")
        #expect(object["topic"] as? String == "com.example.legacy")
    }

    @Test func aCAHasNoTeamID() async throws {
        let run = await CredentialsCLI.run(["inspect", Fixtures.certs("wwdr.pem")])
        #expect(run.status == 0)
        #expect(!run.output.contains("Team ID"))
        let json = await CredentialsCLI.run(["inspect", Fixtures.certs("wwdr.pem"), "--json"])
        #expect(json.output.contains(#""teamID":null"#))
    }

    /// For every certificate fixture, each topic's kinds in the text rows ("name (kinds)") are the
    /// kinds of the same topic in the JSON `topicKinds`.
    @Test(arguments: [
        "universal.pem", "universal.cer", "production.pem", "development.pem", "expired.pem", "universal-combined.pem",
    ])
    func textAndJSONShowTheSameKinds(file: String) async throws {
        let path = Fixtures.certs(file)
        let text = await CredentialsCLI.run(["inspect", path, "--now", "1800000000"])
        let json = await CredentialsCLI.run(["inspect", path, "--json", "--now", "1800000000"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        let topicKinds = try #require(object["topicKinds"] as? [[String: Any]])
        let fromJSON = topicKinds.map { entry -> String in
            let name = entry["topic"] as? String ?? "?"
            let kinds = entry["kinds"] as? [String] ?? []
            return kinds.isEmpty ? name : "\(name) (\(kinds.joined(separator: ", ")))"
        }
        let rows = text.output.split(separator: "\n").map(String.init)
        guard let start = rows.firstIndex(where: { $0.hasPrefix("Topics ") }) else {
            #expect(fromJSON.isEmpty)
            return
        }
        let fromText = rows[start...].prefix { $0.hasPrefix("Topics ") || $0.hasPrefix("       ") }.map {
            $0.dropFirst(13).trimmingCharacters(in: .whitespaces)
        }
        #expect(fromText == fromJSON)
        #expect(object["topics"] as? [String] == topicKinds.map { $0["topic"] as? String ?? "?" })
    }
}
