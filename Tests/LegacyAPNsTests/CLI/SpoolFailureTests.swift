import Foundation
import TestSupport
import Testing

/// The spool of checked notifications (a temporary file in `$TMPDIR`) failing is an I/O error,
/// not a usage error: the one error line names the spool, its folder and the system's reason, and
/// the exit status is the contract's for a file that cannot be used (2), given by the error's
/// classification (`.fileError`), with nothing sent. The binary runs as a child process, with
/// its own `TMPDIR` (and, for a full spool, a file size limit).
@Suite struct SpoolFailureTests {
    /// Arguments that would send to a port where nothing listens, if the check passed.
    static func send(_ input: String, http2: Bool = false) -> [String] {
        ["send"] + (http2 ? ["--http2", "--topic", "com.example.app"] : []) + [
            "--input", input, "--gateway", "127.0.0.1:1", "--ca-file", Fixtures.certs("ca.pem"),
            "--cert", Fixtures.certs("universal-modern.p12"), "--passphrase-file", Fixtures.certs("passphrase.txt"),
        ]
    }

    static func lines(_ count: Int) -> [UInt8] {
        let token = String(repeating: "ab", count: 32)
        return Array(
            (1...count).map { #"{"token":"\#(token)","payload":{"aps":{"alert":"notification \#($0)"}}}"# + "\n" }
                .joined().utf8)
    }

    @Test func aSpoolThatCannotBeCreatedNamesItsFolder() throws {
        let scratch = try ScratchDirectory()
        let input = try scratch.write(Self.lines(3), named: "in.jsonl")
        // No `tmp` folder in the scratch directory: TMPDIR names a folder that does not exist.
        let result = try FeedbackSafetyTests.run(Self.send(input), directory: scratch.path, stdoutPath: nil)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.errorLines == [
                "legacy-push: error: cannot create the spool of the checked notifications, a temporary file in "
                    + "'\(scratch.path)/tmp': No such file or directory (TMPDIR names another folder)"
            ])
    }

    @Test(.timeLimit(.minutes(1)))
    func aSpoolThatCannotBeWrittenIsAnIOErrorNotAUsageError() throws {
        let scratch = try ScratchDirectory()
        try FileManager.default.createDirectory(atPath: scratch.file("tmp"), withIntermediateDirectories: true)
        // About 300 KiB of spool records (the HTTP/2 send spools every checked line to the file),
        // past a 64 KiB file size limit: the spool's write fails with EFBIG.
        let input = try scratch.write(Self.lines(3_000), named: "in.jsonl")
        let result = try FeedbackSafetyTests.run(
            Self.send(input, http2: true), directory: scratch.path, stdoutPath: nil, fileSizeLimitKiB: 64)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.errorLines == [
                "legacy-push: error: cannot write the spool of the checked notifications, a temporary file in "
                    + "'\(scratch.path)/tmp': File too large (TMPDIR names a folder with more room)"
            ])
    }
}
