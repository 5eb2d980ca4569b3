import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs

@Suite struct PrivateKeyTests {
    let universal = try! Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("universal.pem")))

    @Test(
        arguments: [
            ("universal.key", nil),  // PKCS#8
            ("universal-pkcs1.key", nil),  // traditional RSA
            ("universal-encrypted.key", "secret"),  // encrypted PKCS#8 (AES-256, PBKDF2)
            ("universal-encrypted-pkcs1.key", "secret"),  // traditional, Proc-Type: 4,ENCRYPTED
            ("universal-combined.pem", nil),  // certificate then key in one file
            ("universal.key", "ignored for unencrypted keys"),
        ] as [(String, String?)])
    func everyEncodingLoadsTheSameKey(file: String, passphrase: String?) throws {
        let key = try PrivateKey(pemRepresentation: Fixtures.bytes(Fixtures.certs(file)), passphrase: passphrase)
        #expect(key.matches(universal))
        #expect(key.publicKeyDERRepresentation == universal.publicKeyDERRepresentation)
        #expect(key.keyDescription == KeyDescription(algorithm: .rsa, bits: 2048))
    }

    @Test func writesUnencryptedPKCS8LikeOpenSSL() throws {
        let key = try PrivateKey(
            pemRepresentation: Fixtures.bytes(Fixtures.certs("universal-encrypted-pkcs1.key")), passphrase: "secret")
        // universal.key is the PKCS#8 form openssl itself wrote.
        #expect(
            key.pemRepresentation == String(decoding: Fixtures.bytes(Fixtures.certs("universal.key")), as: UTF8.self))
        let again = try PrivateKey(pemRepresentation: Array(key.pemRepresentation.utf8))
        #expect(again.derRepresentation == key.derRepresentation)
    }

    @Test func otherKeysDoNotMatch() throws {
        let other = try PrivateKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("other.key")))
        #expect(!other.matches(universal))
        let server = try PrivateKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("server.key")))
        #expect(!server.matches(universal))
        #expect(server.keyDescription.description == "EC P-256")
        #expect(server.matches(try Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("server.pem")))))
    }

    @Test(arguments: ["universal-encrypted.key", "universal-encrypted-pkcs1.key"])
    func wrongOrMissingPassphraseIsWrongPassphrase(file: String) {
        let bytes = Fixtures.bytes(Fixtures.certs(file))
        #expect(throws: LegacyAPNsError(.wrongPassphrase, "wrong passphrase for the private key")) {
            try PrivateKey(pemRepresentation: bytes, passphrase: "not-the-passphrase")
        }
        #expect(throws: LegacyAPNsError(.wrongPassphrase, "wrong passphrase for the private key")) {
            try PrivateKey(pemRepresentation: bytes, passphrase: "")
        }
        #expect(throws: LegacyAPNsError(.wrongPassphrase, "the private key is encrypted and no passphrase was given")) {
            try PrivateKey(pemRepresentation: bytes, passphrase: nil)
        }
    }

    @Test func noKeyIsMissingDamagedKeyIsCorrupt() {
        #expect(throws: LegacyAPNsError(.missingCredentials, "no private key in the PEM data")) {
            try PrivateKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("universal.pem")))
        }
        #expect(throws: LegacyAPNsError(.missingCredentials, "no private key in the PEM data")) {
            try PrivateKey(pemRepresentation: Array("hello".utf8))
        }
        for file in ["universal.key", "universal-encrypted.key"] {
            var lines = String(decoding: Fixtures.bytes(Fixtures.certs(file)), as: UTF8.self)
                .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            lines[3] = "!!!!" + lines[3].dropFirst(4)  // not base64
            do {
                _ = try PrivateKey(pemRepresentation: Array(lines.joined(separator: "\n").utf8), passphrase: "secret")
                Issue.record("damaged \(file) loaded")
            } catch let error as LegacyAPNsError {
                #expect(error.code == .corruptCredentials, "\(file): \(error)")
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    @Test func errorsNeverContainThePassphrase() {
        let passphrase = "hunter2-very-secret"
        do {
            _ = try PrivateKey(
                pemRepresentation: Fixtures.bytes(Fixtures.certs("universal-encrypted.key")), passphrase: passphrase)
        } catch {
            #expect(!"\(error)".contains(passphrase))
        }
    }
}
