import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs

@Suite struct CertificateSummaryTests {
    let universal = try! Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("universal.pem")))
    let day: Int64 = 86400

    @Test func countsDaysLeftAgainstTheInjectedNow() {
        let notAfter = universal.notAfter
        #expect(CertificateSummary(certificate: universal, now: notAfter - 45 * day).daysLeft == 45)
        #expect(CertificateSummary(certificate: universal, now: notAfter - 45 * day + 1).daysLeft == 44)
        #expect(CertificateSummary(certificate: universal, now: notAfter).daysLeft == 0)
        #expect(CertificateSummary(certificate: universal, now: notAfter + 1).daysLeft == -1)
        #expect(CertificateSummary(certificate: universal, now: notAfter + day).daysLeft == -1)
        #expect(CertificateSummary(certificate: universal, now: notAfter + day + 1).daysLeft == -2)
    }

    @Test(
        arguments: [
            (-31, false, false),  // 31 days left
            (-30, false, false),  // exactly 30 days left: no warning yet
            (-29, true, false),  // under 30 days
            (0, true, false),  // the last second
            (1, false, true),  // expired
        ] as [(Int64, Bool, Bool)])
    func warnsUnderThirtyDaysAndDetectsExpiry(daysAfterExpiry: Int64, expiresSoon: Bool, expired: Bool) {
        let now = universal.notAfter + daysAfterExpiry * day + (daysAfterExpiry == 1 ? -day + 1 : 0)
        let summary = CertificateSummary(certificate: universal, now: now)
        #expect(summary.expiresSoon == expiresSoon)
        #expect(summary.isExpired == expired)
    }

    @Test func expiredFixtureIsExpiredToday() throws {
        let expired = try Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("expired.pem")))
        let summary = CertificateSummary(certificate: expired, now: 1_800_000_000)
        #expect(summary.isExpired)
        #expect(!summary.expiresSoon)
        #expect(summary.daysLeft == -2572)  // 2571.3 days ago, rounded down
        #expect(CertificateSummary(certificate: expired, now: 1_560_000_000).isExpired == false)
        #expect(CertificateSummary(certificate: expired, now: 1_500_000_000).isNotYetValid)
    }

    @Test func jsonHasTheContractFieldsInAStableOrder() throws {
        let key = try PrivateKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("universal.key")))
        let wwdr = try Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("wwdr.pem")))
        let summary = CertificateSummary(
            certificate: universal, privateKey: key, chain: [wwdr], now: universal.notAfter - 10 * day)
        let json = summary.jsonRepresentation
        let prefix =
            #"{"subject":"C=US,O=Example Corp,OU=TEAM123456,CN=Apple Push Services: com.example.legacy,UID=com.example.legacy","#
            + #""issuer":"O=LegacyAPNs Tests,OU=G4,CN=LegacyAPNs Test Worldwide Developer Relations CA","#
            + #""topic":"com.example.legacy","#
            + #""topics":["com.example.legacy","com.example.legacy.voip","com.example.legacy.complication"],"#
            + #""environment":"both","notBefore":"\#(universal.notBeforeISO8601)","notAfter":"2126-11-05T16:24:04Z","#
            + #""daysLeft":10,"expired":false,"notYetValid":false,"keyMatches":true,"keyType":"RSA","keyBits":2048,"#
        #expect(json.hasPrefix(prefix), "\(json)")
        #expect(json.contains(#""topicKinds":[{"topic":"com.example.legacy","kinds":["app"]},"#))
        #expect(
            json.contains(#""chain":["O=LegacyAPNs Tests,OU=G4,CN=LegacyAPNs Test Worldwide Developer Relations CA"]}"#)
        )
        #expect(json.contains(#""sha256Fingerprint":"\#(summary.sha256Fingerprint)""#))
        let valid = Array(json.utf8).withUnsafeBytes { bytes in
            (try? JSONScanner.validateDocument(bytes)) != nil
        }
        #expect(valid)
    }

    @Test func jsonKeyMatchesIsNullWithoutKeyAndTopicsFallBackToTheUID() throws {
        let development = try Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("development.pem")))
        let json = CertificateSummary(certificate: development, now: 0).jsonRepresentation
        #expect(json.contains(#""topics":["com.example.legacy"],"environment":"development""#))
        #expect(json.contains(#""keyMatches":null"#))
        let other = try PrivateKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("other.key")))
        #expect(
            CertificateSummary(certificate: development, privateKey: other, now: 0).jsonRepresentation.contains(
                #""keyMatches":false"#))
        let server = try Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs("server.pem")))
        #expect(
            CertificateSummary(certificate: server, now: 0).jsonRepresentation.contains(
                #""topic":null,"topics":[],"environment":"unknown""#))
    }

    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00Z"), (951_782_400, "2000-02-29T00:00:00Z"),
        (4_102_444_799, "2099-12-31T23:59:59Z"),
        (-1, "1969-12-31T23:59:59Z"), (1_769_860_800, "2026-01-31T12:00:00Z"),
    ])
    func utcTimeRoundTrips(seconds: Int64, text: String) {
        #expect(UTCTime.iso8601(seconds) == text)
        let f = UTCTime.fields(seconds)
        #expect(
            UTCTime.seconds(year: f.year, month: f.month, day: f.day, hour: f.hour, minute: f.minute, second: f.second)
                == seconds)
    }
}
