import APNsCore
import TestSupport
import Testing

@testable import APNsCredentials

/// A .p12 file with more than one private key (Fixtures/certs/regenerate.sh joins them): the key
/// that belongs to the certificate is used whatever the order of the bags, and a file holding two
/// complete identities is refused, since which one was meant cannot be told.
@Suite struct PKCS12KeySelectionTests {
    let universal = try! Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("universal.pem")))
    let wwdr = try! Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("wwdr.pem")))

    @Test(arguments: ["stray-key-first.p12", "stray-key-last.p12"])
    func aStrayKeyIsPassedOverForTheOneThatMatchesTheCertificate(_ file: String) throws {
        let identity = try ClientIdentity(pkcs12: Fixtures.bytes(Fixtures.certs(file)), passphrase: "secret")
        #expect(identity.certificate == universal)
        #expect(identity.privateKey.matches(universal))
        #expect(identity.chain == [wwdr])
        let credentials = try Credentials(Fixtures.bytes(Fixtures.certs(file)), passphrase: "secret")
        #expect(credentials.certificate == universal)
        #expect(credentials.keyMatches == true)
    }

    @Test(arguments: ["two-identities.p12", "two-identities-reversed.p12"])
    func twoIdentitiesInOneFileAreRefusedNamingBoth(_ file: String) throws {
        let error = try #require(throws: LegacyAPNsError.self) {
            try ClientIdentity(pkcs12: Fixtures.bytes(Fixtures.certs(file)), passphrase: "secret")
        }
        #expect(error.code == .unsupportedCredentials)
        #expect(error.reason.hasPrefix("the PKCS#12 file holds 2 identities ("))
        #expect(error.reason.contains("'Apple Push Services: com.example.legacy'"))
        #expect(error.reason.contains("'Apple Development IOS Push Services: com.example.legacy'"))
        #expect(error.reason.hasSuffix("export the one you mean on its own"))
        #expect(throws: LegacyAPNsError.self) {
            try Credentials(Fixtures.bytes(Fixtures.certs(file)), passphrase: "secret")
        }
    }

    @Test func keysWithoutTheirCertificateAreAMismatch() throws {
        let other = try PrivateKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("other.key")), passphrase: nil)
        let development = try PrivateKey(
            pemRepresentation: Fixtures.bytes(Fixtures.certs("development.key")), passphrase: nil)
        let error = try #require(throws: LegacyAPNsError.self) {
            try PKCS12.choose(keys: [other, development], certificates: [universal, wwdr])
        }
        #expect(error.code == .keyMismatch)
        #expect(error.reason == "the PKCS#12 file holds 2 private keys and none of them belongs to a certificate in it")
    }
}
