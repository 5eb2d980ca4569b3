/// The JSON body of an APNs response, and of a GOAWAY's debug data.
///
/// Written compactly as `{"reason":"BadTopic"}`, plus `"timestamp":N` when there is one (410).
///
/// Read leniently but safely: the whole body must be one valid JSON object (checked by the core's
/// strict scanner, which bounds nesting), other members are skipped, a `reason` string nobody knows
/// survives as a ``ProviderReason``, and a `reason` or `timestamp` of the wrong JSON type is
/// ignored rather than failing the response (the status already says the most important thing).
/// Anything that is not a JSON object comes back as a failure value naming the problem, never a
/// crash. When a member appears twice the later one wins, as in most JSON readers.
extension ProviderResponse {
    /// The two members of a response body APNs defines.
    public struct Body: Hashable, Sendable {
        /// The `reason` string, if the body had one.
        public var reason: ProviderReason?
        /// The `timestamp` in milliseconds, if the body had a whole non-negative number there.
        public var timestamp: UInt64?

        /// Creates a body.
        public init(reason: ProviderReason? = nil, timestamp: UInt64? = nil) {
            self.reason = reason
            self.timestamp = timestamp
        }
    }

    /// Appends the JSON body: `{"reason":"..."}`, with `"timestamp":N` when set; `{}` for a failure
    /// without a reason; nothing at all when ``hasBody`` is false (a plain success).
    public func encodeBody(into bytes: inout [UInt8]) {
        guard hasBody else { return }
        bytes.append(UInt8(ascii: "{"))
        if let reason {
            bytes.append(contentsOf: #""reason":"#.utf8)
            appendJSONString(reason.rawValue, to: &bytes)
        }
        if let timestamp {
            if reason != nil { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: #""timestamp":"#.utf8)
            appendDecimal(timestamp, to: &bytes)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// The JSON body as bytes (empty for a plain success).
    public var bodyBytes: [UInt8] {
        var bytes: [UInt8] = []
        encodeBody(into: &bytes)
        return bytes
    }

    /// Reads a response body (or GOAWAY debug data); see the rules above.
    ///
    /// - Returns: the members, or a ``LegacyAPNsError/Code-swift.struct/malformedResponse`` error
    ///   saying what is wrong ("response body is not a JSON object", with the offset of a syntax
    ///   error).
    public static func decodeBody(_ bytes: some Collection<UInt8>) -> Result<Body, LegacyAPNsError> {
        withContiguousBytes(bytes) { decodeBody($0) }
    }

    /// Reads a response body in memory (the HTTP/2 session's bytes); see the public `decodeBody(_:)`.
    package static func decodeBody(_ bytes: UnsafeRawBufferPointer) -> Result<Body, LegacyAPNsError> {
        do throws(JSONScanner.Failure) {
            return .success(try scanBody(bytes))
        } catch {
            return .failure(
                LegacyAPNsError(
                    .malformedResponse, "response body is not a JSON object: \(error.message) at byte \(error.offset)"))
        }
    }

    /// Reads a response body (or GOAWAY debug data); see `decodeBody(_:)`.
    public static func decodeBody(_ bytes: [UInt8]) -> Result<Body, LegacyAPNsError> {
        bytes.withUnsafeBytes { decodeBody($0) }
    }

    /// Takes the body a client received: sets ``reason`` and ``timestamp`` from it.
    ///
    /// - Returns: the decoding failure, if any (the response keeps its status either way).
    package mutating func takeBody(_ bytes: UnsafeRawBufferPointer) -> LegacyAPNsError? {
        switch Self.decodeBody(bytes) {
        case .success(let body):
            reason = body.reason
            timestamp = body.timestamp
            return nil
        case .failure(let error):
            return error
        }
    }

    private static func scanBody(_ bytes: UnsafeRawBufferPointer) throws(JSONScanner.Failure) -> Body {
        try JSONScanner.validateDocument(bytes)
        var index = JSONScanner.skipWhitespace(bytes, from: 0)
        guard bytes[index] == UInt8(ascii: "{") else {
            throw JSONScanner.Failure(
                offset: index, message: "found \(JSONScanner.describe(bytes, at: index)) where '{' should start")
        }
        var body = Body()
        index = JSONScanner.skipWhitespace(bytes, from: index + 1)
        if bytes[index] == UInt8(ascii: "}") { return body }
        var key: [UInt8] = []
        while true {
            // The document is valid, so every step below finds what it expects.
            let keyEnd = try JSONScanner.skipString(bytes, from: index)
            key.removeAll(keepingCapacity: true)
            JSONScanner.decodeString(bytes, from: index, to: keyEnd, into: &key)
            index = JSONScanner.skipWhitespace(bytes, from: keyEnd) + 1  // past ':'
            let valueStart = JSONScanner.skipWhitespace(bytes, from: index)
            let valueEnd = try JSONScanner.skipValue(bytes, from: valueStart, depth: 1)
            if key.elementsEqual("reason".utf8) {
                body.reason = stringValue(bytes, from: valueStart, to: valueEnd).map(ProviderReason.init(rawValue:))
            } else if key.elementsEqual("timestamp".utf8) {
                body.timestamp = wholeNumber(bytes, from: valueStart, to: valueEnd)
            }
            index = JSONScanner.skipWhitespace(bytes, from: valueEnd)
            if bytes[index] == UInt8(ascii: "}") { return body }
            index = JSONScanner.skipWhitespace(bytes, from: index + 1)  // past ','
        }
    }

    private static func stringValue(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> String? {
        guard bytes[start] == UInt8(ascii: "\"") else { return nil }
        var decoded: [UInt8] = []
        JSONScanner.decodeString(bytes, from: start, to: end, into: &decoded)
        return String(decoding: decoded, as: UTF8.self)
    }

    /// Digits only (no sign, fraction or exponent), fitting 64 bits; nil otherwise.
    private static func wholeNumber(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> UInt64? {
        var value: UInt64 = 0
        guard start < end else { return nil }
        for index in start..<end {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
        }
        return value
    }
}
