import APNsRuntime
import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs

@Suite struct PushFieldsTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var file: String
        var environment: CertificateEnvironment
        var topic: String?
        var topics: [PushTopic]
        var hasExtension: Bool
        var testDescription: String { file }
    }

    static let cases: [Case] = [
        Case(
            file: "universal.pem", environment: .both, topic: "com.example.legacy",
            topics: [
                PushTopic(name: "com.example.legacy", kinds: ["app"]),
                PushTopic(name: "com.example.legacy.voip", kinds: ["voip"]),
                PushTopic(name: "com.example.legacy.complication", kinds: ["complication"]),
            ], hasExtension: true),
        Case(
            file: "development.pem", environment: .development, topic: "com.example.legacy",
            topics: [PushTopic(name: "com.example.legacy")], hasExtension: false),
        Case(
            file: "production.pem", environment: .production, topic: "com.example.legacy",
            topics: [PushTopic(name: "com.example.legacy")], hasExtension: false),
        Case(file: "server.pem", environment: .unknown, topic: nil, topics: [], hasExtension: false),
    ]

    @Test(arguments: cases)
    func readsTopicTopicsAndEnvironment(_ expected: Case) throws {
        let certificate = try Certificate(pemRepresentation: Fixtures.bytes(Fixtures.certs(expected.file)))
        #expect(certificate.environment == expected.environment)
        #expect(certificate.topic == expected.topic)
        #expect(certificate.topics == expected.topics)
        #expect(certificate.hasTopicsExtension == expected.hasExtension)
    }

    @Test func parsesAppleShapedTopicsExtension() {
        // SEQUENCE { UTF8 "a.b", SEQUENCE { UTF8 "app" }, UTF8 "a.b.voip", SEQUENCE { UTF8 "voip", UTF8 "x" } }
        let value: [UInt8] = [
            0x30, 0x21,
            0x0C, 0x03, 0x61, 0x2E, 0x62,
            0x30, 0x05, 0x0C, 0x03, 0x61, 0x70, 0x70,
            0x0C, 0x08, 0x61, 0x2E, 0x62, 0x2E, 0x76, 0x6F, 0x69, 0x70,
            0x30, 0x09, 0x0C, 0x04, 0x76, 0x6F, 0x69, 0x70, 0x0C, 0x01, 0x78,
        ]
        #expect(
            PushTopic.parseExtension(value) == [
                PushTopic(name: "a.b", kinds: ["app"]), PushTopic(name: "a.b.voip", kinds: ["voip", "x"]),
            ])
        // Topics without kinds are fine too.
        #expect(PushTopic.parseExtension([0x30, 0x03, 0x0C, 0x01, 0x61]) == [PushTopic(name: "a")])
    }

    @Test(
        arguments: [
            ("empty", []),
            ("lone tag", [0x30]),
            ("not a sequence", [0x04, 0x00]),
            ("empty sequence", [0x30, 0x00]),
            ("length past the end", [0x30, 0x05, 0x0C, 0x01, 0x61]),
            ("inner length past the end", [0x30, 0x03, 0x0C, 0x05, 0x61]),
            ("indefinite length", [0x30, 0x80, 0x0C, 0x01, 0x61, 0x00, 0x00]),
            ("five length octets", [0x30, 0x85, 0x00, 0x00, 0x00, 0x00, 0x03, 0x0C, 0x01, 0x61]),
            ("non-minimal long length", [0x30, 0x81, 0x03, 0x0C, 0x01, 0x61]),
            ("high tag number", [0x30, 0x03, 0x1F, 0x01, 0x00]),
            ("kinds before any topic", [0x30, 0x05, 0x30, 0x03, 0x0C, 0x01, 0x61]),
            ("integer inside", [0x30, 0x03, 0x02, 0x01, 0x05]),
            ("trailing bytes", [0x30, 0x03, 0x0C, 0x01, 0x61, 0x00]),
            ("invalid UTF-8 topic", [0x30, 0x03, 0x0C, 0x01, 0xFF]),
            ("huge length", [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF]),
        ] as [(String, [UInt8])])
    func garbageExtensionsYieldNoTopics(label: String, value: [UInt8]) {
        #expect(PushTopic.parseExtension(value) == nil, "\(label)")
    }

    @Test func randomBytesNeverTrapTheReader() {
        var generator = SplitMix64(seed: 0x5EED)
        for length in 0..<200 {
            for _ in 0..<20 {
                var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if !bytes.isEmpty, Bool.random(using: &generator) { bytes[0] = 0x30 }
                _ = PushTopic.parseExtension(bytes)
                _ = CredentialFormat.detect(bytes)
            }
        }
    }
}

/// A tiny deterministic generator, so the random-input test is reproducible.
