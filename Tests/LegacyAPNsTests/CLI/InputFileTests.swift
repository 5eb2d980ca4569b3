import Foundation
import TestSupport
import Testing

@testable import LegacyPushCLI

/// Input files that change under the reader: never a crash, a clear error.
@Suite struct InputFileTests {
    /// An input truncated by another process while it is being read: the reader gets an error
    /// naming the file and where it ended, and every byte it was handed before stays readable.
    /// (When the input was memory-mapped, touching the handed-out window after the truncation
    /// killed the process with SIGBUS.)
    @Test func aFileTruncatedWhileItIsReadIsAnErrorNotACrash() throws {
        let scratch = try ScratchDirectory()
        let size = 6 * Files.largeChunk + 123
        let path = try scratch.write([UInt8](repeating: 0x61, count: size), named: "input.jsonl")
        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var chunks = 0
        var sum = 0
        let error = #expect(throws: CLIError.self) {
            try Files.forEachChunk(descriptor, path: path, range: nil) { chunk in
                chunks += 1
                if chunks == 1 { truncate(path, 100) }
                for byte in chunk { sum += Int(byte) }  // every byte handed out is still there
            }
        }
        #expect(chunks == 1)
        #expect(sum == 0x61 * Files.largeChunk)
        #expect(
            error?.message.contains("'\(path)' ended at byte \(Files.largeChunk)") == true,
            "\(String(describing: error))")
        #expect(error?.message.contains("truncated") == true)
    }
}
