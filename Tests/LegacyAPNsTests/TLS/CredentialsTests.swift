import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs

@Suite struct CredentialsTests {
    let universal = try! Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("universal.pem")))

    @Test(arguments: [
        ("universal-modern.p12", CredentialFormat.pkcs12), ("universal-legacy.p12", .pkcs12),
        ("universal-unencrypted.p12", .pkcs12), ("universal.pem", .pem), ("universal.key", .pem),
        ("universal-encrypted-pkcs1.key", .pem), ("universal-combined.pem", .pem), ("universal.cer", .der),
        ("chain.pem", .pem),
    ])
    func detectsFormatsByContent(file: String, format: CredentialFormat) {
        #expect(CredentialFormat.detect(Fixtures.bytes(Fixtures.certs(file))) == format)
    }

    @Test func detectsTruncatedFilesByTheirStartAndRejectsNoise() {
        let p12 = Fixtures.bytes(Fixtures.certs("universal-modern.p12"))
        #expect(CredentialFormat.detect(Array(p12.prefix(10))) == .pkcs12)
        let cer = Fixtures.bytes(Fixtures.certs("universal.cer"))
        #expect(CredentialFormat.detect(Array(cer.prefix(10))) == .der)
        #expect(CredentialFormat.detect([]) == nil)
        #expect(CredentialFormat.detect(Array("hello".utf8)) == nil)
        #expect(CredentialFormat.detect([0x30, 0x03, 0x02, 0x01, 0x00]) == nil)  // PKCS#8-like version 0
        // "Bag Attributes" text before the PEM, as `openssl pkcs12 -nodes` prints it.
        #expect(
            CredentialFormat.detect(Array("Bag Attributes\n    friendlyName: x\n-----BEGIN CERTIFICATE-----\n".utf8))
                == .pem)
    }

    @Test func aCerLoadsAsACertificateWithoutKey() throws {
        let credentials = try Credentials(Fixtures.bytes(Fixtures.certs("universal.cer")), passphrase: nil)
        #expect(credentials.format == .der)
        #expect(credentials.certificate == universal)
        #expect(credentials.privateKey == nil)
        #expect(credentials.keyMatches == nil)
        #expect(throws: LegacyAPNsError(.missingCredentials, "there is a certificate but no private key")) {
            try credentials.identity()
        }
    }

    @Test func aCerWithASeparateKeyIsAnIdentity() throws {
        let credentials = try Credentials(
            Fixtures.bytes(Fixtures.certs("universal.cer")),
            keyPEM: Fixtures.bytes(Fixtures.certs("universal-pkcs1.key")),
            passphrase: nil)
        #expect(credentials.keyMatches == true)
        #expect(try credentials.identity().certificate == universal)
    }

    @Test func mismatchingKeyIsKeptForInspection() throws {
        let credentials = try Credentials(
            Fixtures.bytes(Fixtures.certs("universal.pem")), keyPEM: Fixtures.bytes(Fixtures.certs("other.key")),
            passphrase: nil)
        #expect(credentials.keyMatches == false)
        #expect(throws: LegacyAPNsError(.keyMismatch, "private key does not match the certificate")) {
            try credentials.identity()
        }
    }

    @Test func aSeparateKeyOverridesTheOneInsideAndPicksTheLeaf() throws {
        let p12 = try Credentials(Fixtures.bytes(Fixtures.certs("universal-modern.p12")), passphrase: "secret")
        #expect(p12.keyMatches == true)
        let other = try PrivateKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("other.key")))
        #expect(p12.replacingPrivateKey(other).keyMatches == false)

        // A bundle with the chain first: without a key the leaf is the first certificate that is not
        // a CA (issue #14: it used to be the CA, whose OU then passed for the Team ID); with one, the
        // certificate the key belongs to.
        let bundle = try Credentials(
            Fixtures.bytes(Fixtures.certs("chain.pem")) + Fixtures.bytes(Fixtures.certs("universal.pem")),
            passphrase: nil)
        #expect(bundle.certificate.subjectName.commonName == "Apple Push Services: com.example.legacy")
        #expect(bundle.chain.count == 2)
        let key = try PrivateKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("universal.key")))
        let rearranged = bundle.replacingPrivateKey(key)
        #expect(rearranged.certificate == universal)
        #expect(rearranged.chain.count == 2)
    }

    @Test func unknownBytesAreCorrupt() {
        #expect(
            throws: LegacyAPNsError(
                .corruptCredentials, "not a certificate or PKCS#12 file (expected PKCS#12, PEM or DER contents)")
        ) {
            try Credentials(Array("just some text".utf8), passphrase: nil)
        }
    }
}
