import Foundation
import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs

@Suite struct SigningKeyTests {
    static let keyPath = Fixtures.certs("AuthKey_ABC123DEFG.p8")
    static let publicKeyPath = Fixtures.certs("AuthKey_ABC123DEFG.pub.pem")

    /// What `openssl pkey -in <path> -pubout -outform DER | sha256sum` prints, up to the space
    /// (with `-pubin` for a public key file).
    static func opensslFingerprint(_ path: String, publicKey: Bool = false) throws -> String {
        let pipeline = #"openssl pkey -in "$1" $2 -pubout -outform DER | sha256sum"#
        let result = try CLIRunner.runProcess(
            URL(fileURLWithPath: "/bin/sh"), ["-c", pipeline, "sh", path, publicKey ? "-pubin" : ""])
        #expect(result.status == 0, "\(result.stderr)")
        return String(result.output.prefix { $0 != " " })
    }

    @Test func loadsApplesP8Format() throws {
        let key = try SigningKey(pemRepresentation: Fixtures.bytes(Self.keyPath))
        #expect(key.curve == "P-256")
        #expect(key.privateKey.keyDescription.description == "EC P-256")
        #expect(key.fingerprint.count == 64)
        #expect(key.fingerprint.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(key.description == "SigningKey(EC P-256, SHA-256 \(key.fingerprint))")
        #expect(key.pemRepresentation == String(decoding: Fixtures.bytes(Self.keyPath), as: UTF8.self))
    }

    @Test func encodingsAndFingerprintMatchOpenSSL() throws {
        let key = try SigningKey(pemRepresentation: Fixtures.bytes(Self.keyPath))
        #expect(key.fingerprint == (try Self.opensslFingerprint(Self.keyPath)))
        #expect(key.publicKey.fingerprint == (try Self.opensslFingerprint(Self.publicKeyPath, publicKey: true)))
        let publicDER = try OpenSSLTool.run(["pkey", "-in", Self.keyPath, "-pubout", "-outform", "DER"])
        #expect(key.publicKeyDERRepresentation == publicDER.output)
        // (openssl pkey would write the SEC1 form of an EC key; pkcs8 -topk8 writes PKCS#8.)
        let privateDER = try OpenSSLTool.run(["pkcs8", "-topk8", "-nocrypt", "-in", Self.keyPath, "-outform", "DER"])
        #expect(key.derRepresentation == privateDER.output)
    }

    @Test func thePublicKeyLoadsFromItsPEMFromTheP8AndFromDER() throws {
        let key = try SigningKey(pemRepresentation: Fixtures.bytes(Self.keyPath))
        let fromPEM = try SigningKey.PublicKey(pemRepresentation: Fixtures.bytes(Self.publicKeyPath))
        let fromP8 = try SigningKey.PublicKey(pemRepresentation: Fixtures.bytes(Self.keyPath))
        let fromDER = try SigningKey.PublicKey(derRepresentation: key.publicKeyDERRepresentation)
        #expect(fromPEM == key.publicKey)
        #expect(fromP8 == key.publicKey)
        #expect(fromDER == key.publicKey)
        #expect(fromPEM.fingerprint == key.fingerprint)
        #expect(fromPEM.curve == "P-256")
        #expect(fromPEM.pemRepresentation == String(decoding: Fixtures.bytes(Self.publicKeyPath), as: UTF8.self))
        #expect(Set([fromPEM, fromP8, fromDER]).count == 1)
    }

    @Test func anotherKeyHasAnotherFingerprint() throws {
        let key = try SigningKey(pemRepresentation: Fixtures.bytes(Self.keyPath))
        let other = try SigningKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("AuthKey_ZYX987WVUT.p8")))
        #expect(other.fingerprint != key.fingerprint)
        #expect(other.publicKey != key.publicKey)
    }

    static let requirement = "APNs signing keys are EC P-256 (.p8 from the developer portal)"
    static let encrypted =
        "the key is encrypted; Apple's .p8 keys are not encrypted (decrypt it with: openssl pkey -in KEY -out AuthKey_<KEYID>.p8)"

    @Test(arguments: [
        ("p8-rsa.p8", LegacyAPNsError(.unsupportedKey, "the key is an RSA key; \(requirement)")),
        ("p8-ed25519.p8", LegacyAPNsError(.unsupportedKey, "the key is an Ed25519 key; \(requirement)")),
        ("p8-p384.p8", LegacyAPNsError(.unsupportedKey, "the key is on curve P-384 (secp384r1); \(requirement)")),
        ("p8-encrypted.p8", LegacyAPNsError(.unsupportedKey, encrypted)),
        (
            "p8-corrupt.p8",
            LegacyAPNsError(
                .corruptCredentials,
                "damaged private key in the PEM data (bad base64 or framing); use an intact copy of the .p8 (Apple offers its download only once)"
            )
        ),
        ("universal-pkcs1.key", LegacyAPNsError(.unsupportedKey, "the key is an RSA key; \(requirement)")),
        ("universal-encrypted-pkcs1.key", LegacyAPNsError(.unsupportedKey, encrypted)),
        (
            "universal.pem",
            LegacyAPNsError(
                .missingCredentials,
                "this is a certificate, not a signing key; token authentication signs with the .p8 key from the developer portal"
            )
        ),
        (
            "AuthKey_ABC123DEFG.pub.pem",
            LegacyAPNsError(
                .missingCredentials,
                "this is a public key; signing needs the private .p8 key (a public key only verifies)")
        ),
    ])
    func everyBadKeyFileGivesOneClearError(file: String, error: LegacyAPNsError) {
        #expect(throws: error) { try SigningKey(pemRepresentation: Fixtures.bytes(Fixtures.certs(file))) }
    }

    @Test func emptyGarbageAndTruncatedInputAreRefused() {
        #expect(
            throws: LegacyAPNsError(
                .missingCredentials, "empty input, expected an APNs signing key (-----BEGIN PRIVATE KEY-----)")
        ) { try SigningKey(pemRepresentation: []) }
        #expect(throws: LegacyAPNsError.self) { try SigningKey(pemRepresentation: Array(" \n".utf8)) }
        #expect(
            throws: LegacyAPNsError(
                .corruptCredentials,
                "not a PEM signing key (an AuthKey_<KEYID>.p8 file starts with -----BEGIN PRIVATE KEY-----)")
        ) { try SigningKey(pemRepresentation: Array("this is not a key\n".utf8)) }
        #expect(throws: LegacyAPNsError.self) { try SigningKey(pemRepresentation: [0x30, 0x82, 0x01, 0x00, 0xFF]) }
        let whole = Fixtures.bytes(Self.keyPath)
        for length in [30, 100, whole.count - 30] {
            do {
                _ = try SigningKey(pemRepresentation: Array(whole.prefix(length)))
                Issue.record("a .p8 cut to \(length) bytes loaded")
            } catch let error as LegacyAPNsError {
                #expect(error.code == .corruptCredentials, "\(length): \(error)")
                #expect(error.reason.contains("damaged"), "\(length): \(error)")
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
    }

    @Test func otherP256KeyFormsLoadToo() throws {
        // The simulator's TLS key is a P-256 PKCS#8 key; the SEC1 form is what `openssl ec` writes.
        _ = try SigningKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("server.key")))
        let sec1 = try OpenSSLTool.run(["ec", "-in", Self.keyPath])
        #expect(sec1.text.hasPrefix("-----BEGIN EC PRIVATE KEY-----"))
        let key = try SigningKey(pemRepresentation: sec1.output)
        #expect(key.fingerprint == (try Self.opensslFingerprint(Self.keyPath)))
    }

    @Test func publicKeysOfOtherKindsAreRefused() throws {
        let rsa = try OpenSSLTool.run(["pkey", "-in", Fixtures.certs("p8-rsa.p8"), "-pubout"])
        #expect(throws: LegacyAPNsError(.unsupportedKey, "the key is an RSA key; \(Self.requirement)")) {
            try SigningKey.PublicKey(pemRepresentation: rsa.output)
        }
        let p384 = try OpenSSLTool.run(["pkey", "-in", Fixtures.certs("p8-p384.p8"), "-pubout", "-outform", "DER"])
        #expect(throws: LegacyAPNsError(.unsupportedKey, "the key is on curve P-384 (secp384r1); \(Self.requirement)"))
        {
            try SigningKey.PublicKey(derRepresentation: p384.output)
        }
        #expect(
            throws: LegacyAPNsError(
                .missingCredentials, "this is a certificate, not an APNs signing key or its public key")
        ) { try SigningKey.PublicKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("universal.pem"))) }
        #expect(throws: LegacyAPNsError(.unsupportedKey, Self.encrypted)) {
            try SigningKey.PublicKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("p8-encrypted.p8")))
        }
        var damaged = Fixtures.bytes(Self.publicKeyPath)
        damaged[40] = UInt8(ascii: "*")
        #expect(throws: LegacyAPNsError.self) { try SigningKey.PublicKey(pemRepresentation: damaged) }
        #expect(throws: LegacyAPNsError.self) { try SigningKey.PublicKey(derRepresentation: [0x30, 0x00]) }
    }

    @Test(
        arguments: [
            ("AuthKey_ABC123DEFG.p8", "ABC123DEFG"),
            ("/home/me/Downloads/AuthKey_ZYX987WVUT.p8", "ZYX987WVUT"),
            ("keys/AuthKey_0123456789.p8", "0123456789"),
            ("AuthKey_abc123defg.p8", nil),
            ("AuthKey_ABC123DEF.p8", nil),
            ("AuthKey_ABC123DEFGH.p8", nil),
            ("AuthKey_ABC123DEFG.p8.bak", nil),
            ("AuthKey_ABC123DEFG.pem", nil),
            ("authkey_ABC123DEFG.p8", nil),
            ("ABC123DEFG.p8", nil),
            ("AuthKey_ABC123DEFG (1).p8", nil),
            ("", nil),
        ] as [(String, String?)])
    func keyIDComesFromApplesFileName(name: String, keyID: String?) {
        #expect(SigningKey.keyID(fromFileName: name) == keyID)
    }
}
