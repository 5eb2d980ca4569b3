import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs

@Suite struct PKCS12WritingTests {
    let identity = try! ClientIdentity(
        pkcs12: Fixtures.bytes(Fixtures.certs("universal-legacy.p12")), passphrase: "secret")

    @Test(arguments: PKCS12Encryption.allCases)
    func writtenFilesReadBackWithKeyAndChain(encryption: PKCS12Encryption) throws {
        let bytes = try identity.pkcs12Representation(
            passphrase: "new pass", encryption: encryption, friendlyName: "push")
        #expect(CredentialFormat.detect(bytes) == .pkcs12)
        let again = try ClientIdentity(pkcs12: bytes, passphrase: "new pass")
        #expect(again.certificate == identity.certificate)
        #expect(again.chain == identity.chain)
        #expect(again.privateKey.derRepresentation == identity.privateKey.derRepresentation)
        #expect(throws: LegacyAPNsError(.wrongPassphrase, "wrong passphrase for the PKCS#12 file")) {
            try ClientIdentity(pkcs12: bytes, passphrase: "old pass")
        }
    }

    @Test(arguments: PKCS12Encryption.allCases)
    func emptyPassphraseFilesOpenWithoutOne(encryption: PKCS12Encryption) throws {
        let bytes = try identity.pkcs12Representation(passphrase: "", encryption: encryption)
        #expect(try ClientIdentity(pkcs12: bytes, passphrase: nil).certificate == identity.certificate)
    }

    @Test func modernFilesOpenWithOpenSSLWithoutLegacy() throws {
        let scratch = try ScratchDirectory()
        let path = try scratch.write(
            identity.pkcs12Representation(passphrase: "pw", friendlyName: "Push Cert"), named: "modern.p12")
        let result = try OpenSSLTool.run(["pkcs12", "-in", path, "-info", "-nodes", "-passin", "pass:pw"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.error.contains("MAC: sha256"))
        #expect(result.error.contains("PBES2, PBKDF2, AES-256-CBC"))
        #expect(result.text.contains("friendlyName: Push Cert"))
        #expect(result.text.contains("-----BEGIN PRIVATE KEY-----"))
    }

    @Test func legacyFilesUseRC2AndTripleDESWithSHA1MAC() throws {
        let scratch = try ScratchDirectory()
        let path = try scratch.write(
            identity.pkcs12Representation(passphrase: "pw", encryption: .legacy), named: "legacy.p12")
        let result = try OpenSSLTool.run(["pkcs12", "-in", path, "-info", "-nodes", "-legacy", "-passin", "pass:pw"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.error.contains("MAC: sha1"))
        #expect(result.error.contains("PKCS7 Encrypted data: pbeWithSHA1And40BitRC2-CBC"))
        #expect(result.error.contains("Shrouded Keybag: pbeWithSHA1And3-KeyTripleDES-CBC"))
        // Without the legacy provider, openssl cannot decrypt it: proof it really is RC2-40.
        let modernOnly = try OpenSSLTool.run(["pkcs12", "-in", path, "-info", "-nodes", "-passin", "pass:pw"])
        #expect(modernOnly.status != 0)
    }
}
