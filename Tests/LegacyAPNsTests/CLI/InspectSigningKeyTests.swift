import Foundation
import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs
@testable import LegacyPushCLI

@Suite struct InspectSigningKeyTests {
    static let keyPath = Fixtures.certs("AuthKey_ABC123DEFG.p8")
    let fingerprint = try! SigningKey(pemRepresentation: Fixtures.bytes(keyPath)).fingerprint

    @Test func summarisesAnAuthKey() async {
        let run = await CredentialsCLI.run(["inspect", Self.keyPath])
        #expect(run.status == 0)
        #expect(run.error == "")
        #expect(
            run.output.split(separator: "\n") == [
                "Kind         APNs signing key (.p8, EC private key)",
                "Key ID       ABC123DEFG",
                "Curve        P-256",
                "Fingerprint  \(fingerprint) (SHA-256 of the public key)",
            ])
    }

    @Test func jsonCarriesKindKeyIDCurveAndFingerprint() async throws {
        let run = await CredentialsCLI.run(["inspect", Self.keyPath, "--json"])
        #expect(run.status == 0)
        #expect(
            run.output
                == #"{"kind":"signingKey","keyID":"ABC123DEFG","curve":"P-256","fingerprint":"\#(fingerprint)"}"# + "\n"
        )
        let object = try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        #expect(object.count == 4)
    }

    @Test func aKeyNamedOtherwiseHasAnUnknownKeyID() async throws {
        let scratch = try ScratchDirectory()
        let path = try scratch.write(Fixtures.bytes(Self.keyPath), named: "push-key.p8")
        let run = await CredentialsCLI.run(["inspect", path])
        #expect(run.status == 0)
        #expect(run.output.contains("Key ID       unknown (name the file AuthKey_<KEYID>.p8)\n"))
        let json = await CredentialsCLI.run(["inspect", path, "--json"])
        #expect(json.output.contains(#""keyID":null"#))
    }

    @Test func thePublicKeyShowsTheSameFingerprint() async {
        let run = await CredentialsCLI.run(["inspect", Fixtures.certs("AuthKey_ABC123DEFG.pub.pem"), "--json"])
        #expect(run.status == 0)
        #expect(
            run.output
                == #"{"kind":"signingPublicKey","keyID":"ABC123DEFG","curve":"P-256","fingerprint":"\#(fingerprint)"}"#
                + "\n")
    }

    @Test(arguments: [
        ("p8-rsa.p8", "the key is an RSA key; APNs signing keys are EC P-256 (.p8 from the developer portal)"),
        ("p8-ed25519.p8", "the key is an Ed25519 key; APNs signing keys are EC P-256"),
        ("p8-p384.p8", "the key is on curve P-384 (secp384r1); APNs signing keys are EC P-256"),
        ("p8-encrypted.p8", "the key is encrypted; Apple's .p8 keys are not encrypted"),
        ("p8-corrupt.p8", "damaged private key in the PEM data"),
    ])
    func badP8FilesExitTwoWithOneErrorLine(file: String, expected: String) async {
        let run = await CredentialsCLI.run(["inspect", Fixtures.certs(file)])
        #expect(run.status == 2)
        #expect(run.output == "")
        #expect(run.errorLines.count == 1)
        #expect(run.error.split(separator: "\n").count == 1)
        #expect(run.error.hasPrefix("legacy-push: error: \(Fixtures.certs(file)): \(expected)"), "\(run.error)")
    }

    @Test(arguments: ["empty", "garbage", "certificate", "truncated", "with --key"])
    func otherBadInputExitsTwoWithOneErrorLine(problem: String) async throws {
        let scratch = try ScratchDirectory()
        let arguments: [String]
        let expected: String
        switch problem {
        case "empty":
            arguments = [try scratch.write([], named: "AuthKey_ABC123DEFG.p8")]
            expected = "empty input, expected an APNs signing key"
        case "garbage":
            arguments = [try scratch.write(Array("not a key\n".utf8), named: "key.p8")]
            expected = "not a PEM signing key"
        case "certificate":
            arguments = [try scratch.write(Fixtures.bytes(Fixtures.certs("universal.pem")), named: "cert.p8")]
            expected = "this is a certificate, not a signing key"
        case "truncated":
            let truncated = Array(Fixtures.bytes(Self.keyPath).prefix(120))
            arguments = [try scratch.write(truncated, named: "AuthKey_ABC123DEFG.p8")]
            expected = "damaged private key"
        default:
            arguments = [Self.keyPath, "--key", Fixtures.certs("universal.key")]
            expected = "--key does not apply to an APNs signing key"
        }
        let run = await CredentialsCLI.run(["inspect"] + arguments)
        #expect(run.status == 2)
        #expect(run.output == "")
        #expect(run.errorLines.count == 1)
        #expect(run.error.split(separator: "\n").count == 1)
        #expect(run.error.contains(expected), "\(run.error)")
    }

    @Test func theBuiltBinaryInspectsAKey() throws {
        let run = try CLIRunner.runBinary(["inspect", Self.keyPath, "--json"])
        #expect(run.status == 0)
        #expect(run.stderr == "")
        #expect(run.output.hasPrefix(#"{"kind":"signingKey","keyID":"ABC123DEFG","curve":"P-256","fingerprint":""#))
        let bad = try CLIRunner.runBinary(["inspect", Fixtures.certs("p8-rsa.p8")])
        #expect(bad.status == 2)
        #expect(bad.stdout.isEmpty)
        #expect(bad.errorLines.count == 1)
        #expect(bad.stderr.hasPrefix("legacy-push: error: "))
    }

    @Test func helpMentionsSigningKeys() async {
        let run = await CredentialsCLI.run(["inspect", "--help"])
        #expect(run.output.contains(".p8"))
    }
}
