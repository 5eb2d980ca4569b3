import APNsRuntime
import Foundation
import FuzzHarness
import LegacyAPNs
import TestSupport
import Testing

/// Replays the fuzz targets' property checks on the checked-in corpus (Fixtures/fuzz/<target>,
/// including every input a fuzzer ever crashed on) and on the seed fixtures, so what libFuzzer
/// found stays fixed. Scripts/fuzz.sh runs the same checks for minutes on mutated input.
@Suite struct FuzzRegressionTests {
    static let fixtures = FrameFixtures.directory.deletingLastPathComponent()

    static func files(_ relative: String, suffix: String? = nil) -> [URL] {
        let directory = fixtures.appendingPathComponent(relative)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.sorted().filter { suffix == nil || $0.hasSuffix(suffix!) }.map {
            directory.appendingPathComponent($0)
        }
    }

    static let inputs: [String: [URL]] = [
        "frame-decoder": files("frames", suffix: ".bin") + files("fuzz/frame-decoder"),
        "error-response": files("frames", suffix: ".bin") + files("fuzz/error-response"),
        "feedback-decoder": files("feedback") + files("fuzz/feedback-decoder"),
        "jsonl": files("jsonl") + files("fuzz/jsonl"),
        "pkcs12": files("certs", suffix: ".p12") + files("certs", suffix: ".cer") + files("fuzz/pkcs12"),
        "provider-server": files("fuzz/provider-server"),
        "provider-response": files("fuzz/provider-response"),
        "channel-api": files("fuzz/channel-api"),
    ]

    @Test(arguments: [
        "frame-decoder", "error-response", "feedback-decoder", "jsonl", "pkcs12", "provider-server",
        "provider-response", "channel-api",
    ])
    func corpusStillPassesThePropertyChecks(_ target: String) throws {
        let inputs = try #require(Self.inputs[target])
        #expect(inputs.count >= 5)
        let check = try #require(FuzzTargets.all[target])
        for url in inputs {
            let bytes = try Data(contentsOf: url)
            bytes.withUnsafeBytes { check($0) }
        }
    }

    @Test func hostileBytesFromAFixedGeneratorPassEveryTarget() {
        var generator = SplitMix64(seed: 8)
        for target in FuzzTargets.all.values {
            for length in [0, 1, 2, 5, 6, 13, 40, 300] {
                let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                bytes.withUnsafeBytes { target($0) }
            }
        }
    }
}
