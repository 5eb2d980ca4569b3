import APNsInput
import CommandLineKit
import Foundation
import TestSupport
import Testing

@testable import LegacyPushCLI

/// Issue #14: `frame encode` and `frame decode` on a terminal, and the annotated `.hex` fixtures.
@Suite struct FrameTerminalTests {
    static let token = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"

    static func run(_ arguments: [String], stdin: Bool = false, stdout: Bool = false) async -> CLIRunner.Result {
        let console = Console(memoryWithTerminals: stdin, stdout: stdout, stderr: true)
        let status = await LegacyPush.main(arguments, console: console)
        return CLIRunner.Result(status: status, stdout: console.capturedOutput, stderr: console.capturedError)
    }

    @Test func encodeRefusesToWriteRawBytesToATerminal() async {
        let result = await Self.run(["frame", "encode", "--token", Self.token, "--payload", "{}"], stdout: true)
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(
            result.stderr
                == "legacy-push: error: frame encode writes raw bytes, which a terminal cannot show: redirect them to "
                + "a file (> file.bin) or a pipe, or add --hex for hex text\n")
    }

    @Test func encodeHexWritesHexPairsThatDecodeHexReadsBack() async throws {
        let hex = await Self.run(
            [
                "frame", "encode", "--hex", "--token", Self.token, "--payload", #"{"aps":{"alert":"Hello"}}"#, "--id",
                "1234",
            ],
            stdout: true)
        #expect(hex.status == 0)
        #expect(hex.output.hasPrefix("01 00 00 04 d2 00 00 00 00 00 20 74 0f 47 07 be\n"))
        let fixture = try #require(FrameFixtures.all.first { $0.name == "enhanced-basic" })
        #expect(try HexText.decode(hex.stdout, name: "x") == fixture.bin)
        // The raw form to a file or pipe is unchanged.
        let raw = await Self.run(
            ["frame", "encode", "--token", Self.token, "--payload", #"{"aps":{"alert":"Hello"}}"#, "--id", "1234"])
        #expect(raw.stdout == fixture.bin)
    }

    @Test func decodeWithoutAPathRefusesATerminalStdinAndNamesTheFileArgument() async {
        let result = await Self.run(["frame", "decode"], stdin: true)
        #expect(result.status == 2)
        #expect(
            result.stderr
                == "legacy-push: error: frame decode reads frames from a file or a pipe, and stdin is a terminal: give "
                + "the file (frame decode PATH), pipe the bytes in, or give - to type them here\n")
    }

    @Test func decodeHelpSaysHowToTypeFramesIntoATerminal() async {
        let help = await CLIRunner.run(["frame", "decode", "--help"])
        let text = help.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(text.contains("give - to type (hex, with --hex) into the terminal, ending with Ctrl-D"))
        #expect(help.output.contains("--hex"))
    }

    /// Every annotated fixture decodes with --hex exactly as its binary twin does: same output,
    /// same errors, same status.
    @Test(arguments: FrameFixtures.all)
    func everyAnnotatedHexFixtureDecodesLikeItsBinary(_ fixture: FrameFixtures.Entry) async {
        let directory = FrameFixtures.directory.path
        let fromHex = await CLIRunner.run(["frame", "decode", "--json", "--hex", "\(directory)/\(fixture.name).hex"])
        let fromBinary = await CLIRunner.run(["frame", "decode", "--json", "\(directory)/\(fixture.name).bin"])
        #expect(fromHex.status == fromBinary.status)
        #expect(fromHex.stdout == fromBinary.stdout)
        #expect(
            fromHex.stderr.replacingOccurrences(of: ".hex", with: ".bin") == fromBinary.stderr,
            "\(fromHex.stderr)")
    }

    @Test(arguments: [
        ("01 0g", "'x.hex' line 1: 'g' is not a hex digit (--hex reads hex pairs, # comments and white space)"),
        ("# c\n01 02\n0", "'x.hex' ends with half a byte: an odd number of hex digits"),
    ])
    func badHexIsOneErrorLine(text: String, message: String) async throws {
        let scratch = try ScratchDirectory()
        let path = try scratch.write(Array(text.utf8), named: "x.hex")
        let result = await CLIRunner.run(["frame", "decode", "--hex", path])
        #expect(result.status == 2)
        #expect(
            result.stderr == "legacy-push: error: \(message.replacingOccurrences(of: "'x.hex'", with: "'\(path)'"))\n")
    }
}
