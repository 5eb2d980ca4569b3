import Foundation
import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs
@testable import LegacyPushCLI

@Suite struct ConvertCommandTests {
    let passphraseFile = Fixtures.certs("passphrase.txt")

    @Test func p12ToPEMWritesCertificateChainAndKeyWithMode0600() async throws {
        let scratch = try ScratchDirectory()
        let out = scratch.file("push.pem")
        let run = await CredentialsCLI.run([
            "convert", Fixtures.certs("universal-legacy.p12"), "--out", out, "--passphrase-file", passphraseFile,
        ])
        #expect(run.status == 0, "\(run.error)")
        #expect(run.output == "wrote \(out): certificate, 1 chain certificate, unencrypted private key\n")
        let expected = try ClientIdentity(
            pkcs12: Fixtures.bytes(Fixtures.certs("universal-legacy.p12")), passphrase: "secret")
        #expect(scratch.read("push.pem") == Array(expected.pemRepresentation.utf8))
        #expect(CredentialsCLI.mode(out) == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["push.pem"])
    }

    @Test func neverOverwritesWithoutForce() async throws {
        let scratch = try ScratchDirectory()
        let out = try scratch.write(Array("keep me\n".utf8), named: "push.pem")
        chmod(out, 0o644)
        let arguments = ["convert", Fixtures.certs("universal-combined.pem"), "--out", out]
        let refused = await CredentialsCLI.run(arguments)
        #expect(refused.status == 2)
        #expect(refused.errorLines == ["legacy-push: error: '\(out)' already exists (use --force to overwrite it)"])
        #expect(scratch.read("push.pem") == Array("keep me\n".utf8))

        let forced = await CredentialsCLI.run(arguments + ["--force"])
        #expect(forced.status == 0, "\(forced.error)")
        #expect(scratch.read("push.pem")?.starts(with: Array("-----BEGIN CERTIFICATE-----".utf8)) == true)
        #expect(CredentialsCLI.mode(out) == 0o600)
    }

    @Test(arguments: [false, true])
    func pemToP12OpensWithOpenSSL(legacy: Bool) async throws {
        let scratch = try ScratchDirectory()
        let out = scratch.file("push.p12")
        // The modern file takes its passphrase from PATH (setenv is unsafe in parallel tests).
        let passphrase = legacy ? "out pass" : try #require(ProcessInfo.processInfo.environment["PATH"])
        let source =
            legacy
            ? ["--out-passphrase-file", try scratch.write(Array("out pass\n".utf8), named: "out.txt"), "--legacy"]
            : ["--out-passphrase-env", "PATH"]
        let run = await CredentialsCLI.run(
            [
                "convert", Fixtures.certs("universal.pem"), "--key", Fixtures.certs("universal-encrypted.key"),
                "--passphrase-file", passphraseFile, "--out", out, "--name", "Push",
            ] + source)
        #expect(run.status == 0, "\(run.error)")
        #expect(run.error == "")
        #expect(CredentialsCLI.mode(out) == 0o600)

        let info = try OpenSSLTool.run(
            ["pkcs12", "-in", out, "-info", "-nodes", "-passin", legacy ? "pass:out pass" : "env:PATH"]
                + (legacy ? ["-legacy"] : []))
        #expect(info.status == 0, "\(info.error)")
        #expect(info.text.contains("friendlyName: Push"))
        if legacy {
            #expect(info.error.contains("pbeWithSHA1And40BitRC2-CBC"))
            #expect(info.error.contains("MAC: sha1"))
        } else {
            #expect(info.error.contains("AES-256-CBC"))
            #expect(info.error.contains("MAC: sha256"))
        }
        let identity = try ClientIdentity(pkcs12: try #require(scratch.read("push.p12")), passphrase: passphrase)
        #expect(identity.certificate.topic == "com.example.legacy")
    }

    @Test func cerToPEMIsTheCertificateOnly() async throws {
        let scratch = try ScratchDirectory()
        let out = scratch.file("aps.pem")
        let run = await CredentialsCLI.run(["convert", Fixtures.certs("universal.cer"), "--out", out])
        #expect(run.status == 0, "\(run.error)")
        #expect(run.output == "wrote \(out): certificate\n")
        #expect(scratch.read("aps.pem") == Fixtures.bytes(Fixtures.certs("universal.pem")))
        let mode = try #require(CredentialsCLI.mode(out))
        #expect(mode & 0o111 == 0)
        #expect(mode & 0o600 == 0o600)
    }

    @Test func dashWritesToStdout() async {
        let run = await CredentialsCLI.run(["convert", Fixtures.certs("universal.cer"), "--out", "-", "--to", "pem"])
        #expect(run.status == 0)
        #expect(Array(run.output.utf8) == Fixtures.bytes(Fixtures.certs("universal.pem")))
        let noFormat = await CredentialsCLI.run(["convert", Fixtures.certs("universal.cer"), "--out", "-"])
        #expect(noFormat.status == 2)
    }

    @Test func outputFormatComesFromTheExtensionOrTo() async throws {
        let scratch = try ScratchDirectory()
        let unknown = await CredentialsCLI.run([
            "convert", Fixtures.certs("universal.cer"), "--out", scratch.file("x.out"),
        ])
        #expect(unknown.status == 2)
        #expect(unknown.errorLines.count == 1)
        #expect(unknown.error.contains("give --to pem or --to p12"))

        let explicit = await CredentialsCLI.run([
            "convert", Fixtures.certs("universal.cer"), "--out", scratch.file("x.out"), "--to", "pem",
        ])
        #expect(explicit.status == 0)

        let pfx = await CredentialsCLI.run([
            "convert", Fixtures.certs("universal-combined.pem"), "--out", scratch.file("x.PFX"),
        ])
        #expect(pfx.status == 0, "\(pfx.error)")
        #expect(pfx.error.contains("empty passphrase"))  // a warning, not an error
        #expect(pfx.errorLines.isEmpty)
        #expect(CredentialFormat.detect(try #require(scratch.read("x.PFX"))) == .pkcs12)
    }

    @Test(arguments: ["mismatch", "wrong passphrase", "no key for p12", "legacy for pem", "missing input", "corrupt"])
    func failuresExitTwoWithOneErrorLineAndNoFile(problem: String) async throws {
        let scratch = try ScratchDirectory()
        let garbage = try scratch.write(Array(repeating: 0x30, count: 40), named: "garbage.p12")
        let wrong = try scratch.write(Array("nope".utf8), named: "wrong.txt")
        let arguments: [String]
        switch problem {
        case "mismatch":
            arguments = [
                Fixtures.certs("universal.pem"), "--key", Fixtures.certs("other.key"), "--out", scratch.file("o.pem"),
            ]
        case "wrong passphrase":
            arguments = [
                Fixtures.certs("universal-modern.p12"), "--passphrase-file", wrong, "--out", scratch.file("o.pem"),
            ]
        case "no key for p12":
            arguments = [Fixtures.certs("universal.cer"), "--out", scratch.file("o.p12")]
        case "legacy for pem":
            arguments = [Fixtures.certs("universal-combined.pem"), "--legacy", "--out", scratch.file("o.pem")]
        case "missing input":
            arguments = [scratch.file("missing.p12"), "--out", scratch.file("o.pem")]
        default:
            arguments = [garbage, "--out", scratch.file("o.pem")]
        }
        let run = await CredentialsCLI.run(["convert"] + arguments)
        #expect(run.status == 2)
        #expect(run.errorLines.count == 1, "\(run.error)")
        #expect(run.error.split(separator: "\n").count == 1)
        #expect(run.output == "")
        let left = try FileManager.default.contentsOfDirectory(atPath: scratch.path).sorted()
        #expect(left == ["garbage.p12", "wrong.txt"])
    }

    @Test func helpHasExamples() async {
        let run = await CredentialsCLI.run(["help", "convert"])
        #expect(run.status == 0)
        for text in [
            "--out <path>", "--to <pem|p12>", "--legacy", "--out-passphrase-env <name>", "--force", "EXAMPLES:",
        ] {
            #expect(run.output.contains(text), "\(text)")
        }
    }
}
