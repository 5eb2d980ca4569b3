import COpenSSL
import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs

@Suite struct ClientIdentityTests {
    let universal = try! Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("universal.pem")))
    let wwdr = try! Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("wwdr.pem")))

    @Test(
        arguments: [
            ("universal-modern.p12", "secret"),  // AES-256-CBC, PBKDF2, SHA-256 MAC
            ("universal-3des.p12", "secret"),  // 3DES bags, SHA-1 MAC
            ("universal-legacy.p12", "secret"),  // Keychain style: RC2-40 certificates (legacy provider)
            ("universal-unencrypted.p12", "secret"),  // no encryption, MAC only
            ("universal-nomac.p12", "secret"),  // encrypted key, no MAC
            ("universal-modern-nopass.p12", nil),
            ("universal-modern-nopass.p12", ""),
            ("universal-legacy-nopass.p12", nil),
            ("universal-legacy-nopass.p12", ""),
        ] as [(String, String?)])
    func everyPKCS12StyleLoads(file: String, passphrase: String?) throws {
        let identity = try ClientIdentity(pkcs12: Fixtures.bytes(Fixtures.certs(file)), passphrase: passphrase)
        #expect(identity.certificate == universal)
        #expect(identity.privateKey.matches(universal))
        #expect(identity.chain == [wwdr])
    }

    @Test(arguments: [
        ("development.p12", CertificateEnvironment.development),
        ("production.p12", .production),
        ("expired.p12", .both),
    ])
    func environmentsSurviveThePKCS12(file: String, environment: CertificateEnvironment) throws {
        let identity = try ClientIdentity(pkcs12: Fixtures.bytes(Fixtures.certs(file)), passphrase: "secret")
        #expect(identity.certificate.environment == environment)
        #expect(identity.certificate.topic == "com.example.legacy")
    }

    @Test(
        arguments: [
            ("universal-modern.p12", "wrong"), ("universal-3des.p12", "wrong"), ("universal-legacy.p12", "wrong"),
            ("universal-unencrypted.p12", "wrong"), ("universal-legacy.p12", nil), ("universal-legacy.p12", ""),
            ("universal-modern-nopass.p12", "secret"),
        ] as [(String, String?)])
    func wrongPassphraseIsReportedAsSuch(file: String, passphrase: String?) {
        #expect(throws: LegacyAPNsError(.wrongPassphrase, "wrong passphrase for the PKCS#12 file")) {
            try ClientIdentity(pkcs12: Fixtures.bytes(Fixtures.certs(file)), passphrase: passphrase)
        }
    }

    @Test(arguments: [
        ("garbage", Array("definitely not a PKCS#12 file".utf8)),
        ("empty", []),
        ("truncated", Array(Fixtures.bytes(Fixtures.certs("universal-legacy.p12")).prefix(700))),
        ("a certificate", Fixtures.bytes(Fixtures.certs("universal.cer"))),
        ("cut by one byte", Array(Fixtures.bytes(Fixtures.certs("universal-modern.p12")).dropLast())),
    ])
    func corruptOrTruncatedFilesAreNotWrongPassphrase(label: String, bytes: [UInt8]) {
        do {
            _ = try ClientIdentity(pkcs12: bytes, passphrase: "secret")
            Issue.record("\(label) loaded")
        } catch let error as LegacyAPNsError {
            #expect(error.code == .corruptCredentials, "\(label)")
            #expect(error.reason.hasPrefix("not a PKCS#12 file: "), "\(label): \(error.reason)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func damagedOuterStructureIsCorrupt() throws {
        // (A byte flipped inside the signed content makes the MAC fail instead, which PKCS#12 cannot
        // tell apart from a wrong passphrase.)
        var bytes = Fixtures.bytes(Fixtures.certs("universal-modern.p12"))
        bytes[4] = 0x03  // the version INTEGER's tag
        do {
            _ = try ClientIdentity(pkcs12: bytes, passphrase: "secret")
            Issue.record("damaged file loaded")
        } catch let error as LegacyAPNsError {
            #expect(error.code == .corruptCredentials, "\(error)")
        }
    }

    @Test(arguments: [nil, ""] as [String?])
    func macLessFilesWithAnEmptyPassphraseLoad(passphrase: String?) throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("nomac-nopass.p12")
        let result = try OpenSSLTool.run([
            "pkcs12", "-export", "-in", Fixtures.certs("universal.pem"), "-inkey", Fixtures.certs("universal.key"),
            "-nomac", "-passout", "pass:", "-out", path,
        ])
        #expect(result.status == 0, "\(result.error)")
        let identity = try ClientIdentity(pkcs12: Fixtures.bytes(path), passphrase: passphrase)
        #expect(identity.certificate == universal)
    }

    @Test func missingLegacyProviderIsExplainedNotCalledCorrupt() {
        // What OpenSSL queues for RC2-40 without the legacy provider: 0308010C "unsupported".
        let unsupported = OpenSSLError(
            operation: "PKCS12_parse", messages: ["error:0308010C:digital envelope routines::unsupported"],
            codes: [.init(library: 6, reason: COpenSSL_ERR_R_UNSUPPORTED)])
        let missing = PKCS12.parseFailure(unsupported, hasLegacyProvider: false)
        #expect(missing.code == .unsupportedCredentials)
        #expect(missing.reason.contains("needs OpenSSL's 'legacy' provider, and it is not installed"))
        let present = PKCS12.parseFailure(unsupported, hasLegacyProvider: true)
        #expect(present.code == .unsupportedCredentials)
        #expect(OpenSSLLibrary.shared.hasLegacyProvider)
    }

    @Test func keyMismatchIsDetected() throws {
        let other = try PrivateKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("other.key")))
        #expect(throws: LegacyAPNsError(.keyMismatch, "private key does not match the certificate")) {
            try ClientIdentity(certificate: universal, privateKey: other)
        }
        #expect(throws: LegacyAPNsError(.keyMismatch, "private key does not match the certificate")) {
            try ClientIdentity(
                pem: Fixtures.bytes(Fixtures.certs("universal.pem")),
                keyPEM: Fixtures.bytes(Fixtures.certs("other.key")), passphrase: nil)
        }
    }

    @Test func pemIdentitiesFromOneFileOrTwo() throws {
        let combined = try ClientIdentity(
            pem: Fixtures.bytes(Fixtures.certs("universal-combined.pem")), passphrase: nil)
        #expect(combined.certificate == universal)
        #expect(combined.chain.isEmpty)

        let separate = try ClientIdentity(
            pem: Fixtures.bytes(Fixtures.certs("universal.pem")),
            keyPEM: Fixtures.bytes(Fixtures.certs("universal-encrypted.key")), passphrase: "secret")
        #expect(separate.certificate == universal)

        // Chain first, then the key, then the leaf: the leaf is found by the key.
        let shuffled =
            Fixtures.bytes(Fixtures.certs("wwdr.pem")) + Fixtures.bytes(Fixtures.certs("universal-pkcs1.key"))
            + Fixtures.bytes(Fixtures.certs("universal.pem")) + Fixtures.bytes(Fixtures.certs("ca.pem"))
        let identity = try ClientIdentity(pem: shuffled, passphrase: nil)
        #expect(identity.certificate == universal)
        #expect(
            identity.chain.map(\.subjectName.commonName) == [
                "LegacyAPNs Test Worldwide Developer Relations CA", "LegacyAPNs Test Root CA",
            ])
    }

    @Test func pemWithoutKeyOrCertificateIsMissingCredentials() {
        #expect(throws: LegacyAPNsError(.missingCredentials, "there is a certificate but no private key")) {
            try ClientIdentity(pem: Fixtures.bytes(Fixtures.certs("universal.pem")), passphrase: nil)
        }
        #expect(throws: LegacyAPNsError(.missingCredentials, "no certificate in the PEM data")) {
            try ClientIdentity(pem: Fixtures.bytes(Fixtures.certs("universal.key")), passphrase: nil)
        }
    }

    @Test func pemRepresentationFollowsOpenSSLOrder() throws {
        let identity = try ClientIdentity(
            pkcs12: Fixtures.bytes(Fixtures.certs("universal-legacy.p12")), passphrase: "secret")
        let pem = identity.pemRepresentation
        #expect(pem == universal.pemRepresentation + wwdr.pemRepresentation + identity.privateKey.pemRepresentation)
        #expect(pem.hasSuffix("-----END PRIVATE KEY-----\n"))
    }

    @Test func errorsNeverContainThePassphrase() {
        let passphrase = "correct horse battery staple"
        for file in ["universal-legacy.p12", "universal-modern.p12"] {
            do {
                _ = try ClientIdentity(pkcs12: Fixtures.bytes(Fixtures.certs(file)), passphrase: passphrase)
            } catch {
                #expect(!"\(error)".contains(passphrase))
            }
        }
    }
}
