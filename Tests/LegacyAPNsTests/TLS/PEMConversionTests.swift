import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs

/// The PEM we write from a .p12 must be what `openssl pkcs12 -legacy -nodes` writes.
@Suite struct PEMConversionTests {
    @Test(arguments: ["universal-legacy.p12", "universal-modern.p12", "development.p12"])
    func convertedPEMMatchesOpenSSL(file: String) throws {
        let path = Fixtures.certs(file)
        let ours = try ClientIdentity(pkcs12: Fixtures.bytes(path), passphrase: "secret").pemRepresentation

        let openssl = try OpenSSLTool.run(["pkcs12", "-in", path, "-legacy", "-nodes", "-passin", "pass:secret"])
        #expect(openssl.status == 0, "\(openssl.error)")
        let theirs = try ClientIdentity(pem: openssl.output, passphrase: nil)

        let scratch = try ScratchDirectory()
        let oursPath = try scratch.write(Array(ours.utf8), named: "ours.pem")
        let theirsPath = try scratch.write(openssl.output, named: "theirs.pem")

        // Same leaf certificate, by openssl's own fingerprint of each file.
        let oursFingerprint = try OpenSSLTool.sha256Fingerprint(ofPEMFile: oursPath)
        #expect(!oursFingerprint.isEmpty)
        #expect(oursFingerprint == (try OpenSSLTool.sha256Fingerprint(ofPEMFile: theirsPath)))

        // Same public key, as openssl derives it from each private key.
        let oursKey = try OpenSSLTool.run(["pkey", "-in", oursPath, "-pubout", "-outform", "DER"])
        let theirsKey = try OpenSSLTool.run(["pkey", "-in", theirsPath, "-pubout", "-outform", "DER"])
        #expect(oursKey.status == 0 && theirsKey.status == 0)
        #expect(oursKey.output == theirsKey.output)
        #expect(oursKey.output == theirs.certificate.publicKeyDERRepresentation)

        // Byte for byte, apart from openssl's "Bag Attributes" comment lines.
        let stripped = openssl.text.split(separator: "\n", omittingEmptySubsequences: false)
            .filter {
                !$0.hasPrefix("Bag Attributes") && !$0.hasPrefix("    ") && !$0.hasPrefix("subject=")
                    && !$0.hasPrefix("issuer=") && !$0.hasPrefix("Key Attributes")
            }
            .joined(separator: "\n")
        #expect(stripped == ours)
    }
}
