import APNsCore

/// The list `serve --feedback-file PATH` serves on its feedback port, in either of two formats,
/// told apart by content:
///
/// - raw tuples, exactly what the feedback service sends and `feedback --save` writes (and
///   `Fixtures/feedback/*.bin` hold): `time` (UInt32), `token length` (UInt16), `token`, repeated,
///   all big-endian;
/// - JSON Lines, one `{"time":N,"token":"<hex>"}` a line (blank lines skipped), as
///   `feedback --json` prints them (`Fixtures/feedback/sample.jsonl`).
///
/// A file that decodes as whole tuples from start to end is raw: JSON text cannot, since a tuple's
/// token length needs a zero byte where text has none. Anything else starting with `{` is read as
/// JSON Lines; an empty file is an empty list.
public enum FeedbackFile {
    /// The format a file was read as.
    public enum Format: Hashable, Sendable {
        /// Raw tuples, as the feedback service sends them.
        case rawTuples
        /// `{"time":N,"token":"<hex>"}` a line.
        case jsonLines
    }

    /// Reads the records of the file at `path` (`-` is stdin); an unreadable file is a
    /// `.fileError`.
    ///
    /// - Throws: ``LegacyAPNsError`` (`.malformedInput`) naming the file and, for JSON Lines, the line; for raw
    ///   tuples, the byte offset.
    public static func records(_ path: String) throws -> [FeedbackRecord] {
        try parse(InputFile.read(path), name: "'\(path)'").records
    }

    /// Parses file contents; `name` is how errors refer to the file.
    public static func parse(_ bytes: [UInt8], name: String) throws -> (records: [FeedbackRecord], format: Format) {
        if bytes.isEmpty { return ([], .rawTuples) }
        let raw = Result { try rawTuples(bytes) }
        if case .success(let records) = raw { return (records, .rawTuples) }
        let firstText = bytes.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D && $0 != 0x0A && $0 != 0xEF }
        guard firstText == UInt8(ascii: "{") else {
            let reason = (raw.error as? LegacyAPNsError)?.reason ?? "unreadable"
            throw LegacyAPNsError(
                .malformedInput,
                "\(name) is neither JSON Lines ({\"time\":N,\"token\":\"<hex>\"} a line) nor raw feedback tuples "
                    + "(as feedback --save writes them): \(reason)")
        }
        return (try jsonLines(bytes, name: name), .jsonLines)
    }

    /// Whole tuples from start to end, or the decoder's error.
    public static func rawTuples(_ bytes: [UInt8]) throws -> [FeedbackRecord] {
        var decoder = FeedbackDecoder()
        decoder.append(bytes)
        var records: [FeedbackRecord] = []
        while let record = try decoder.next() { records.append(record) }
        try decoder.finish()
        return records
    }

    /// `{"time":N,"token":"<hex>"}` a line.
    public static func jsonLines(_ bytes: [UInt8], name: String) throws -> [FeedbackRecord] {
        var records: [FeedbackRecord] = []
        let shape = #"expected {"time":N,"token":"<hex>"}"#
        for (index, line) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            var text = Array(line)
            if index == 0, text.starts(with: [0xEF, 0xBB, 0xBF]) { text.removeFirst(3) }  // a BOM
            if text.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
            let location = "\(name) line \(index + 1)"
            try text.withUnsafeBytes { raw in
                let members: [JSONScanner.Member]
                do {
                    members = try JSONScanner.objectMembers(raw)
                } catch let error as JSONScanner.Failure {
                    throw LegacyAPNsError(
                        .malformedInput, "\(location): \(shape) (\(error.message) at byte \(error.offset + 1))")
                }
                func value(_ key: String) -> Range<Int>? { members.last { $0.key == key }?.value }
                guard let time = value("time") else {
                    throw LegacyAPNsError(.malformedInput, "\(location): missing \"time\"")
                }
                guard let seconds = JSONScanner.unsignedIntegerValue(raw, in: time), seconds <= Int64(UInt32.max)
                else {
                    throw LegacyAPNsError(
                        .malformedInput, "\(location): \"time\" must be UNIX seconds from 0 to 4294967295")
                }
                guard let hex = value("token").flatMap({ JSONScanner.stringValue(raw, in: $0) }) else {
                    throw LegacyAPNsError(.malformedInput, "\(location): missing \"token\" (a string of hex digits)")
                }
                do {
                    records.append(FeedbackRecord(timestamp: UInt32(seconds), token: try DeviceToken(hexString: hex)))
                } catch let error as LegacyAPNsError {
                    throw LegacyAPNsError(.malformedInput, "\(location): \(error.reason)")
                }
            }
        }
        return records
    }
}

extension Result {
    fileprivate var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
