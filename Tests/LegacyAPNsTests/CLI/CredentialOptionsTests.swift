import CommandLineKit
import Foundation
import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs
@testable import LegacyPushCLI

@Suite struct CredentialOptionsTests {
    let console = Console(sink: .memory)

    func arguments(_ values: [String: String]) -> ParsedArguments {
        ParsedArguments(commandPath: "legacy-push test", values: values.mapValues { [$0] })
    }

    @Test func passphraseFromEnvironment() throws {
        // PATH rather than a variable of our own: setenv is unsafe while parallel tests read the
        // environment (spawning openssl copies it).
        let path = try #require(ProcessInfo.processInfo.environment["PATH"])
        #expect(
            try CredentialOptions.passphrase(arguments(["passphrase-env": "PATH"]), console: console, for: "x") == path)
    }

    @Test func unsetEnvironmentVariableIsAUsageError() {
        #expect(throws: CLIError.self) {
            try CredentialOptions.passphrase(
                arguments(["passphrase-env": "LEGACYAPNS_TEST_NEVER_SET"]), console: console, for: "x")
        }
    }

    @Test(arguments: [
        ("secret\n", "secret"), ("secret\r\n", "secret"), ("secret", "secret"), ("", ""), ("a b\n\n", "a b\n"),
    ])
    func passphraseFromFileLosesOneTrailingNewline(contents: String, expected: String) throws {
        let scratch = try ScratchDirectory()
        let path = try scratch.write(Array(contents.utf8), named: "pass.txt")
        #expect(
            try CredentialOptions.passphrase(arguments(["passphrase-file": path]), console: console, for: "x")
                == expected)
    }

    @Test func bothSourcesAtOnceIsAUsageError() throws {
        let name = "PATH"
        #expect(throws: CLIError.self) {
            try CredentialOptions.passphrase(
                arguments(["passphrase-env": name, "passphrase-file": Fixtures.certs("passphrase.txt")]),
                console: console,
                for: "x")
        }
    }

    @Test func neitherSourceWithoutATerminalMeansNoPassphrase() throws {
        #expect(try CredentialOptions.passphrase(arguments([:]), console: console, for: "x") == nil)
    }

    @Test func loadsIdentitiesFromP12AndFromPEMPlusKey() throws {
        let fromP12 = try CredentialOptions.loadIdentity(
            arguments([
                "cert": Fixtures.certs("universal-legacy.p12"), "passphrase-file": Fixtures.certs("passphrase.txt"),
            ]),
            console: console)
        #expect(fromP12.certificate.topic == "com.example.legacy")
        #expect(fromP12.chain.count == 1)

        let fromPEM = try CredentialOptions.loadIdentity(
            arguments([
                "cert": Fixtures.certs("universal.pem"), "key": Fixtures.certs("universal-encrypted.key"),
                "passphrase-file": Fixtures.certs("passphrase.txt"),
            ]), console: console)
        #expect(fromPEM.certificate == fromP12.certificate)

        let noPassphrase = try CredentialOptions.loadIdentity(
            arguments(["cert": Fixtures.certs("universal-legacy-nopass.p12")]), console: console)
        #expect(noPassphrase.certificate == fromP12.certificate)
    }

    @Test func loadIdentityErrorsNameTheFile() throws {
        #expect(throws: CLIError.self) { try CredentialOptions.loadIdentity(arguments([:]), console: console) }
        let path = Fixtures.certs("universal-legacy.p12")
        // Issue #14: no passphrase option and no terminal is "no passphrase given", not "wrong".
        #expect(
            throws: LegacyAPNsError(
                .missingPassphrase,
                "'\(path)' is encrypted and no passphrase was given (stdin is not a terminal, so there is no "
                    + "prompt): use --passphrase-env NAME or --passphrase-file PATH")
        ) {
            try CredentialOptions.loadIdentity(arguments(["cert": path]), console: console)
        }
        // A wrong explicit passphrase (the value of PATH) is still a wrong passphrase.
        #expect(throws: LegacyAPNsError(.wrongPassphrase, "\(path): wrong passphrase for the PKCS#12 file")) {
            try CredentialOptions.loadIdentity(arguments(["cert": path, "passphrase-env": "PATH"]), console: console)
        }
        // The separate key is the file named when it is the encrypted one.
        let key = Fixtures.certs("universal-encrypted.key")
        let error = try #require(throws: LegacyAPNsError.self) {
            try CredentialOptions.loadIdentity(
                arguments(["cert": Fixtures.certs("universal.pem"), "key": key]), console: console)
        }
        #expect(error.code == .missingPassphrase)
        #expect(error.reason.hasPrefix("'\(key)' is encrypted and no passphrase was given"))
        let pem = Fixtures.certs("universal.pem")
        #expect(
            throws: LegacyAPNsError(.missingCredentials, "'\(pem)' holds no private key: give it with --key PATH")
        ) {
            try CredentialOptions.loadIdentity(arguments(["cert": pem]), console: console)
        }
        let other = Fixtures.certs("other.key")
        #expect(
            throws: LegacyAPNsError(
                .keyMismatch, "private key '\(other)' does not match the certificate in '\(pem)'")
        ) {
            try CredentialOptions.loadIdentity(arguments(["cert": pem, "key": other]), console: console)
        }
    }

    @Test func optionTablesHaveTheSharedNames() {
        #expect(CredentialOptions.all.map(\.name) == ["cert", "key", "passphrase-env", "passphrase-file"])
        #expect(CredentialOptions.passphraseOnly.map(\.name) == ["passphrase-env", "passphrase-file"])
    }
}

/// The built binary with stdin a pipe, as under CI or cron (issue #14).
@Suite struct MissingPassphraseTests {
    @Test func anEncryptedFileWithoutPassphraseOptionsAndWithoutATerminalSaysNoPassphraseWasGiven() throws {
        let path = Fixtures.certs("universal-legacy.p12")
        let result = try CLIRunner.runBinary(["inspect", path])
        #expect(result.status == 2)
        #expect(
            result.errorLines == [
                "legacy-push: error: '\(path)' is encrypted and no passphrase was given (stdin is not a terminal, "
                    + "so there is no prompt): use --passphrase-env NAME or --passphrase-file PATH"
            ])
        #expect(result.stdout.isEmpty)
    }

    @Test func anUnencryptedFileNeedsNoPassphraseOption() throws {
        let result = try CLIRunner.runBinary(["inspect", Fixtures.certs("universal-legacy-nopass.p12")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.output.contains("com.example.legacy"))
    }
}
