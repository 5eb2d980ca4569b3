import Foundation
import TestSupport
import Testing

@testable import APNsInput

/// Input files that change under the reader: never a crash, a clear error.
@Suite struct InputFileTests {
    /// Reads a file of 6 MiB and a bit, all `a`, chunk by chunk (`mapped`: the way a large
    /// regular file is read; else with `pread`s), truncating it to `length` bytes while chunk
    /// number `chunk` is handed out; every byte handed out is summed after the truncation.
    private static func readWhileTruncating(mapped: Bool, atChunk chunk: Int, to length: Int) throws -> (
        path: String, chunks: Int, sum: Int, error: LegacyAPNsError?
    ) {
        let scratch = try ScratchDirectory()
        let size = 6 * InputFile.largeChunk + 123
        let path = try scratch.write([UInt8](repeating: 0x61, count: size), named: "input.jsonl")
        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var chunks = 0
        var sum = 0
        let body = { (bytes: UnsafeRawBufferPointer) in
            chunks += 1
            if chunks == chunk { truncate(path, off_t(length)) }
            for byte in bytes { sum += Int(byte) }
        }
        let error = #expect(throws: LegacyAPNsError.self) {
            if mapped {
                try InputFile.forEachChunk(descriptor, path: path, range: nil, body)
            } else {
                try InputFile.forEachChunk(
                    descriptor, path: path, range: 0..<size, chunkSize: InputFile.largeChunk, body)
            }
        }
        return (path, chunks, sum, error)
    }

    /// An input truncated by another process while it is being read with `pread`s (a range
    /// smaller than a chunk, or a file that cannot be mapped): the reader gets an error naming the
    /// file and where it ended, and every byte it was handed before stays readable.
    @Test func aFileTruncatedWhileItIsReadIsAnErrorNotACrash() throws {
        let read = try Self.readWhileTruncating(mapped: false, atChunk: 1, to: 100)
        #expect(read.chunks == 1)
        #expect(read.sum == 0x61 * InputFile.largeChunk)
        #expect(
            read.error?.reason.contains("'\(read.path)' ended at byte \(InputFile.largeChunk)") == true,
            "\(String(describing: read.error))")
        #expect(read.error?.reason.contains("truncated") == true)
    }

    /// The same with the file mapped (the way a large regular file is read): touching the pages
    /// past the new end would kill the process with SIGBUS; guarded, they read as zeros, the
    /// bytes before the new end are intact, and the truncation is the error, before any other
    /// chunk is handed out.
    @Test func aMappedFileTruncatedWhileItIsReadIsAnErrorNotACrash() throws {
        let read = try Self.readWhileTruncating(mapped: true, atChunk: 2, to: InputFile.largeChunk + 100)
        #expect(read.chunks == 2)
        #expect(read.sum == 0x61 * (InputFile.largeChunk + 100))
        #expect(
            read.error?.reason.contains("'\(read.path)' ended at byte \(InputFile.largeChunk + 100) while it was read")
                == true,
            "\(String(describing: read.error))")
        let scratch = try ScratchDirectory()
        // The guard is released: the process still reads other files, and a mapped read of an
        // intact file hands out every byte.
        let other = try scratch.write([UInt8](repeating: 0x01, count: 3 * InputFile.largeChunk + 7), named: "b.jsonl")
        let second = open(other, O_RDONLY)
        try #require(second >= 0)
        defer { close(second) }
        var total = 0
        #expect(
            try InputFile.forEachMappedChunk(second, path: other, range: 5..<(3 * InputFile.largeChunk + 7)) { chunk in
                for byte in chunk { total += Int(byte) }
            })
        #expect(total == 3 * InputFile.largeChunk + 2)
    }

    /// A bad line in a mapped input is reported as the bad line; a bad "line" made of the zeros
    /// of a truncation is reported as the truncation.
    @Test func aTruncationIsNotReportedAsABadLine() async throws {
        let scratch = try ScratchDirectory()
        let line = #"{"token":"\#(String(repeating: "ab", count: 32))","payload":{"aps":{"alert":"x"}}}"# + "\n"
        let count = 3 * InputFile.largeChunk / line.utf8.count
        let path = try scratch.write(Array(String(repeating: line, count: count).utf8), named: "lines.jsonl")
        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var chunks = 0
        let error = #expect(throws: LegacyAPNsError.self) {
            try InputFile.forEachChunk(descriptor, path: path, range: nil) { chunk in
                chunks += 1
                if chunks == 1 { truncate(path, 1000) }
                // What the check does with a line of zeros.
                if chunk.dropFirst(2000).first == 0 { throw LegacyAPNsError(.malformedInput, "line 12: not JSON") }
            }
        }
        #expect(error?.reason.contains("ended at byte 1000 while it was read") == true, "\(String(describing: error))")
    }
}
