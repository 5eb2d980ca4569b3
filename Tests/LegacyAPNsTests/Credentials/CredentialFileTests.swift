import APNsCore
import APNsCredentials
import Foundation
import TestSupport
import Testing

/// The credential file conveniences (`ClientIdentity(pkcs12File:)`, `TLSConfiguration.Trust.pem(file:)`,
/// `SigningKey(pemFile:)`, ...) are APNsCredentials', so every client module has them.
@Suite struct CredentialFileTests {
    /// Every client module, with nothing imported but itself, as an application imports it.
    @Test(arguments: ["LegacyAPNs", "FeedbackClient", "HTTP2Client", "LegacyBridge", "GatewaySimulator"])
    func everyClientModuleHasTheFileConveniences(module: String) throws {
        let source = """
            import \(module)

            let certs = "Fixtures/certs/"
            let identity = try ClientIdentity(pkcs12File: certs + "universal-legacy.p12", passphrase: "secret")
            let fromPEM = try ClientIdentity(pemFile: certs + "universal.pem", keyFile: certs + "universal.key", passphrase: nil)
            let trust = try TLSConfiguration.Trust.pem(file: certs + "ca.pem")
            let chain = try Certificate.certificates(pemFile: certs + "chain.pem")
            let key = try SigningKey(pemFile: certs + "AuthKey_ABC123DEFG.p8")
            print(identity.certificate == fromPEM.certificate, trust, chain.count, key.fingerprint)

            """
        let failure = try ConsumerCompiler.typecheck(source, name: "FileConveniences\(module)")
        #expect(failure == nil, "\(failure.map(String.init(describing:)) ?? "")")
    }

    @Test func signingKeyReadsAP8File() throws {
        let path = Fixtures.certs("AuthKey_ABC123DEFG.p8")
        let key = try SigningKey(pemFile: path)
        #expect(key.fingerprint == (try SigningKey(pemRepresentation: Fixtures.bytes(path))).fingerprint)
        #expect(SigningKey.keyID(fromFileName: path) == "ABC123DEFG")
    }

    @Test func aMissingOrUnreadableKeyFileIsAFileErrorNamingThePath() throws {
        let missing = Fixtures.certs("AuthKey_NOSUCHKEY0.p8")
        #expect(throws: LegacyAPNsError(.fileError, "cannot read '\(missing)': No such file or directory")) {
            try SigningKey(pemFile: missing)
        }
        let directory = Fixtures.root + "/certs"
        #expect(throws: LegacyAPNsError(.fileError, "cannot read '\(directory)': Is a directory")) {
            try SigningKey(pemFile: directory)
        }
        let scratch = try ScratchDirectory()
        let unreadable = try scratch.write(Fixtures.bytes(Fixtures.certs("AuthKey_ABC123DEFG.p8")), named: "key.p8")
        chmod(unreadable, 0)
        if getuid() != 0 {  // root reads it all the same
            #expect(throws: LegacyAPNsError(.fileError, "cannot read '\(unreadable)': Permission denied")) {
                try SigningKey(pemFile: unreadable)
            }
        }
    }

    @Test func aFileThatIsNoKeyNamesThePathAndTheProblem() throws {
        let certificate = Fixtures.certs("universal.pem")
        let error = try #require(throws: LegacyAPNsError.self) { try SigningKey(pemFile: certificate) }
        #expect(error.code == .missingCredentials)
        #expect(error.reason.hasPrefix("\(certificate): "))
    }
}
