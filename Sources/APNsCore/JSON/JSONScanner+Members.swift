extension JSONScanner {
    /// One member of a JSON object: its key (decoded) and where its value lies in the scanned bytes.
    package struct Member: Hashable, Sendable {
        /// The member's name, with escapes decoded.
        package var key: String
        /// The value's bytes in the scanned buffer (already validated).
        package var value: Range<Int>
    }

    /// The members of the JSON object that `bytes` hold (white space around it allowed), in order,
    /// every byte validated on the way. Duplicate keys are kept: the caller decides about them.
    ///
    /// - Throws: ``Failure`` when the bytes are not exactly one JSON object.
    package static func objectMembers(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> [Member] {
        var index = skipWhitespace(bytes, from: 0)
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else {
            throw Failure(offset: index, message: "unexpected \(describe(bytes, at: index)), expected a JSON object")
        }
        var members: [Member] = []
        index = skipWhitespace(bytes, from: index + 1)
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
        } else {
            while true {
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw Failure(
                        offset: index, message: "unexpected \(describe(bytes, at: index)), expected a string key")
                }
                let keyEnd = try skipString(bytes, from: index)
                var key: [UInt8] = []
                decodeString(bytes, from: index, to: keyEnd, into: &key)
                index = skipWhitespace(bytes, from: keyEnd)
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                    throw Failure(offset: index, message: "unexpected \(describe(bytes, at: index)), expected ':'")
                }
                let valueStart = skipWhitespace(bytes, from: index + 1)
                let valueEnd = try skipValue(bytes, from: valueStart, depth: 1)
                members.append(Member(key: String(decoding: key, as: UTF8.self), value: valueStart..<valueEnd))
                index = skipWhitespace(bytes, from: valueEnd)
                guard index < bytes.count else {
                    throw Failure(offset: index, message: "unexpected end of JSON in an object")
                }
                if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    break
                }
                guard bytes[index] == UInt8(ascii: ",") else {
                    throw Failure(
                        offset: index, message: "unexpected \(describe(bytes, at: index)), expected ',' or '}'")
                }
                index = skipWhitespace(bytes, from: index + 1)
            }
        }
        index = skipWhitespace(bytes, from: index)
        if index < bytes.count {
            throw Failure(offset: index, message: "unexpected \(describe(bytes, at: index)) after the JSON object")
        }
        return members
    }

    /// The decoded text when the (validated) value at `range` is a JSON string, else nil.
    package static func stringValue(_ bytes: UnsafeRawBufferPointer, in range: Range<Int>) -> String? {
        guard range.count >= 2, bytes[range.lowerBound] == UInt8(ascii: "\"") else { return nil }
        var decoded: [UInt8] = []
        decodeString(bytes, from: range.lowerBound, to: range.upperBound, into: &decoded)
        return String(decoding: decoded, as: UTF8.self)
    }

    /// The number when the (validated) value at `range` is a non-negative JSON integer written
    /// without sign, fraction or exponent that fits an `Int64`, else nil (`-1`, `1.0`, `1e9` and
    /// `"1"` are all nil).
    package static func unsignedIntegerValue(_ bytes: UnsafeRawBufferPointer, in range: Range<Int>) -> Int64? {
        guard !range.isEmpty else { return nil }
        var value: Int64 = 0
        for index in range {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(digit))
            guard !overflow, !overflow2 else { return nil }
            value = sum
        }
        return value
    }

    /// The value's JSON text, cut to at most `limit` characters (for error messages about
    /// untrusted input).
    package static func excerpt(_ bytes: UnsafeRawBufferPointer, in range: Range<Int>, limit: Int = 40) -> String {
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        return text.count <= limit ? text : String(text.prefix(limit)) + "..."
    }
}
