import Foundation
import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs

@Suite struct CertificateTests {
    let universal = try! Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("universal.pem")))

    @Test func pemAndDERGiveTheSameCertificate() throws {
        let der = try Certificate(derRepresentation: Fixtures.bytes(Fixtures.certs("universal.cer")))
        #expect(der == universal)
        #expect(der.derRepresentation == Fixtures.bytes(Fixtures.certs("universal.cer")))
        #expect(
            universal.pemRepresentation
                == String(decoding: Fixtures.bytes(Fixtures.certs("universal.pem")), as: UTF8.self))
    }

    @Test func readsEveryCertificateOfABundle() {
        let chain = Certificate.certificates(pemRepresentation: Fixtures.bytes(Fixtures.certs("chain.pem")))
        #expect(
            chain.map(\.subjectName.commonName) == [
                "LegacyAPNs Test Worldwide Developer Relations CA", "LegacyAPNs Test Root CA",
            ])
        let combined = Certificate.certificates(
            pemRepresentation: Fixtures.bytes(Fixtures.certs("universal-combined.pem")))
        #expect(combined == [universal])
        #expect(Certificate.certificates(pemRepresentation: Fixtures.bytes(Fixtures.certs("universal.key"))).isEmpty)
        #expect(Certificate.certificates(pemRepresentation: []).isEmpty)
    }

    @Test func namesMatchOpenSSLsRFC2253Rendering() throws {
        let result = try OpenSSLTool.run([
            "x509", "-in", Fixtures.certs("universal.pem"), "-noout", "-subject", "-issuer", "-nameopt", "RFC2253",
        ])
        #expect(result.text == "subject=\(universal.subject)\nissuer=\(universal.issuer)\n")
        #expect(universal.subjectName.uid == "com.example.legacy")
        #expect(universal.subjectName.commonName == "Apple Push Services: com.example.legacy")
        #expect(universal.subjectName.organizationalUnit == "TEAM123456")
        #expect(universal.subjectName.organization == "Example Corp")
        #expect(universal.issuerName.commonName == "LegacyAPNs Test Worldwide Developer Relations CA")
        #expect(universal.subjectName.attributes.map(\.type) == ["UID", "CN", "OU", "O", "C"])
    }

    @Test func escapesSpecialCharactersInRFC4514Names() {
        let name = DistinguishedName(attributes: [
            .init(type: "CN", value: "Smith, John+Co \"x\""), .init(type: "O", value: " #lead"),
            .init(type: "OU", value: "#x "),
        ])
        #expect(name.description == ##"OU=\#x\ ,O=\ #lead,CN=Smith\, John\+Co \"x\""##)
    }

    @Test func validityMatchesOpenSSL() throws {
        let expired = try Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("expired.pem")))
        #expect(expired.notBefore == 1_546_300_800)
        #expect(expired.notAfter == 1_577_836_800)
        #expect(expired.notBeforeISO8601 == "2019-01-01T00:00:00Z")
        #expect(expired.notAfterISO8601 == "2020-01-01T00:00:00Z")
        #expect(!expired.isValid(at: 1_577_836_801))
        #expect(expired.isValid(at: 1_577_836_800))

        let result = try OpenSSLTool.run([
            "x509", "-in", Fixtures.certs("universal.pem"), "-noout", "-enddate", "-dateopt", "iso_8601",
        ])
        // "notAfter=2126-11-05 16:24:04Z"
        let openSSLDate = result.text.dropFirst("notAfter=".count).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(openSSLDate.replacingOccurrences(of: " ", with: "T") == universal.notAfterISO8601)
    }

    @Test(arguments: ["universal.pem", "server.pem", "wwdr.pem", "expired.pem"])
    func fingerprintsMatchOpenSSL(name: String) throws {
        let certificate = try Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs(name)))
        let expected = try OpenSSLTool.sha256Fingerprint(ofPEMFile: Fixtures.certs(name))
        #expect(CertificateSummary.hex(certificate.sha256Fingerprint, separator: ":", uppercase: true) == expected)
        #expect(certificate.sha1Fingerprint.count == 20)
    }

    @Test func describesRSAAndECPublicKeys() throws {
        #expect(universal.publicKeyDescription == KeyDescription(algorithm: .rsa, bits: 2048))
        #expect(universal.publicKeyDescription.description == "RSA 2048-bit")
        let server = try Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("server.pem")))
        #expect(server.publicKeyDescription == KeyDescription(algorithm: .ec, bits: 256, curve: "P-256"))
        #expect(server.publicKeyDescription.description == "EC P-256")
        // 2048-bit RSA SubjectPublicKeyInfo is 294 bytes; the comparison with openssl's bytes is in
        // PEMConversionTests.
        #expect(universal.publicKeyDERRepresentation.count == 294)
    }

    @Test func rejectsGarbageAndTruncatedDER() {
        let der = Fixtures.bytes(Fixtures.certs("universal.cer"))
        for bytes in [[], [0x30], Array(der.prefix(der.count - 1)), der + [0], Array("hello".utf8)] {
            #expect(throws: LegacyAPNsError.self) { try Certificate(derRepresentation: bytes) }
            do {
                _ = try Certificate(derRepresentation: bytes)
            } catch let error as LegacyAPNsError {
                #expect(error.code == .corruptCredentials)
                #expect(error.reason.hasPrefix("not a DER certificate"))
            } catch {}
        }
    }

    @Test func pemWithoutACertificateIsMissingADamagedOneIsCorrupt() {
        #expect(throws: LegacyAPNsError(.missingCredentials, "no certificate in the PEM data")) {
            try Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("universal.key")))
        }
        var damaged = String(decoding: Fixtures.bytes(Fixtures.certs("universal.pem")), as: UTF8.self)
        damaged = damaged.replacingOccurrences(of: "-----END CERTIFICATE-----", with: "")
        do {
            _ = try Certificate(pemRepresentation: Array(damaged.utf8))
            Issue.record("a PEM block without its end line parsed")
        } catch let error as LegacyAPNsError {
            #expect(error.code == .corruptCredentials)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func certificatesAreUsableFromManyTasksAtOnce() async {
        let certificate = universal
        await withTaskGroup(of: String?.self) { group in
            for _ in 0..<16 { group.addTask { certificate.topics.first?.name } }
            for await topic in group { #expect(topic == "com.example.legacy") }
        }
    }
}
