/// Parses the JSON Lines input format of `legacy-push send --input`, one notification a line:
///
/// ```json
/// {"token":"<64 hex digits>","payload":{"aps":{"alert":"Hi"}},"id":7,"expiry":0,"priority":10}
/// ```
/// - `token` (required): hex, case-insensitive; spaces and `<` `>` ignored.
/// - `payload` (required): a JSON object, sent as the exact bytes it occupies in the line (never
///   re-serialised), or a string holding JSON, sent as the string's contents.
/// - `id` (optional, 0...4294967295): the caller's identifier; defaults to the line number.
/// - `expiry` (optional, UNIX seconds) and `priority` (optional, 10 or 5): left out of the frame
///   when absent, where the format allows.
///
/// Blank lines are skipped. Anything else (unknown keys, repeated keys, wrong types) is an error
/// naming the line, so a typo never sends something unintended. The parser works on bytes and
/// builds no object graph: it is the fast path for million-line inputs.
public struct NotificationLineParser: Sendable {
    public init() {}

    /// Parses one line (without its newline). Returns nil for a blank line.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/malformedInput``: "line 3: ...".
    public func parse(_ line: String, lineNumber: Int) throws -> PushNotification? {
        var copy = line
        return try copy.withUTF8 { try parse(UnsafeRawBufferPointer($0), lineNumber: lineNumber) }
    }

    /// Parses one line's bytes (without the newline). Returns nil for a blank line.
    public func parse(_ line: UnsafeRawBufferPointer, lineNumber: Int) throws -> PushNotification? {
        do {
            return try parseFields(line, lineNumber: lineNumber)
        } catch let failure as JSONScanner.Failure {
            throw LegacyAPNsError(
                .malformedInput, "line \(lineNumber): invalid JSON: \(failure.message) at column \(failure.offset + 1)")
        } catch let error as LegacyAPNsError {
            throw LegacyAPNsError(.malformedInput, "line \(lineNumber): \(error.reason)")
        }
    }

    private enum Key: UInt8 {
        case token = 1
        case payload = 2
        case id = 4
        case expiry = 8
        case priority = 16
    }

    private func parseFields(_ bytes: UnsafeRawBufferPointer, lineNumber: Int) throws -> PushNotification? {
        var index = JSONScanner.skipWhitespace(bytes, from: 0)
        if index == bytes.count { return nil }
        guard bytes[index] == UInt8(ascii: "{") else {
            throw LegacyAPNsError(
                .malformedInput, "expected a JSON object, found \(JSONScanner.describe(bytes, at: index))")
        }
        // Validate the whole line first: from here on every extent is well-formed JSON.
        let end = try JSONScanner.skipValue(bytes, from: index, depth: 0)
        let trailing = JSONScanner.skipWhitespace(bytes, from: end)
        if trailing < bytes.count {
            throw LegacyAPNsError(
                .malformedInput, "unexpected \(JSONScanner.describe(bytes, at: trailing)) after the object")
        }

        var seen: UInt8 = 0
        var token: DeviceToken?
        var payload: Payload?
        var identifier: UInt32?
        var expiration: Expiration?
        var priority: Priority?

        index = JSONScanner.skipWhitespace(bytes, from: index + 1)
        while bytes[index] != UInt8(ascii: "}") {
            let keyEnd = try JSONScanner.skipString(bytes, from: index)
            let key = try Self.key(bytes, from: index, to: keyEnd)
            if seen & key.rawValue != 0 {
                throw LegacyAPNsError(.malformedInput, "key \"\(Self.name(of: key))\" appears twice")
            }
            seen |= key.rawValue
            index = JSONScanner.skipWhitespace(bytes, from: keyEnd) + 1  // past ':'
            let valueStart = JSONScanner.skipWhitespace(bytes, from: index)
            let valueEnd = try JSONScanner.skipValue(bytes, from: valueStart, depth: 1)
            let value = UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd])
            switch key {
            case .token:
                guard value[0] == UInt8(ascii: "\"") else { throw typeError("token", "a string of hex digits") }
                var text: [UInt8] = []
                JSONScanner.decodeString(bytes, from: valueStart, to: valueEnd, into: &text)
                token = try text.withUnsafeBytes { try DeviceToken(hexBytes: $0) }
            case .payload:
                switch value[0] {
                case UInt8(ascii: "{"):
                    payload = Payload(unvalidatedBytes: Array(value))
                case UInt8(ascii: "\""):
                    var text: [UInt8] = []
                    JSONScanner.decodeString(bytes, from: valueStart, to: valueEnd, into: &text)
                    payload = try Payload(json: text)
                default:
                    throw typeError("payload", "a JSON object or a string holding JSON")
                }
            case .id:
                identifier = try Self.unsigned(value, name: "id", maximum: UInt64(UInt32.max)).map(UInt32.init)
            case .expiry:
                expiration = try Self.unsigned(value, name: "expiry", maximum: UInt64(UInt32.max)).map {
                    Expiration(rawValue: UInt32($0))
                }
            case .priority:
                if let value = try Self.unsigned(value, name: "priority", maximum: 255) {
                    priority = try Priority(validating: Int(value))
                }
            }
            index = JSONScanner.skipWhitespace(bytes, from: valueEnd)
            if bytes[index] == UInt8(ascii: ",") { index = JSONScanner.skipWhitespace(bytes, from: index + 1) }
        }
        guard let token else { throw LegacyAPNsError(.malformedInput, "missing \"token\"") }
        guard let payload else { throw LegacyAPNsError(.malformedInput, "missing \"payload\"") }
        return PushNotification(
            token: token, payload: payload, identifier: identifier ?? UInt32(truncatingIfNeeded: lineNumber),
            expiration: expiration, priority: priority)
    }

    private func typeError(_ key: String, _ expected: String) -> LegacyAPNsError {
        LegacyAPNsError(.malformedInput, "\"\(key)\" must be \(expected)")
    }

    private static func key(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) throws -> Key {
        let name = UnsafeRawBufferPointer(rebasing: bytes[(start + 1)..<(end - 1)])
        for key in [Key.token, .payload, .id, .expiry, .priority] where name.elementsEqual(Self.name(of: key).utf8) {
            return key
        }
        var decoded: [UInt8] = []
        JSONScanner.decodeString(bytes, from: start, to: end, into: &decoded)
        throw LegacyAPNsError(
            .malformedInput,
            "unknown key \"\(String(decoding: decoded, as: UTF8.self))\" (expected token, payload, id, expiry, priority)"
        )
    }

    private static func name(of key: Key) -> String {
        switch key {
        case .token: "token"
        case .payload: "payload"
        case .id: "id"
        case .expiry: "expiry"
        case .priority: "priority"
        }
    }

    /// A non-negative integer without fraction or exponent, or nil for `null`.
    private static func unsigned(_ value: UnsafeRawBufferPointer, name: String, maximum: UInt64) throws -> UInt64? {
        if value.elementsEqual("null".utf8) { return nil }
        var result: UInt64 = 0
        for byte in value {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else {
                throw LegacyAPNsError(
                    .malformedInput,
                    "\"\(name)\" must be a whole number from 0 to \(maximum), got \(String(decoding: value, as: UTF8.self))"
                )
            }
            let (scaled, overflow1) = result.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = scaled.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2, sum <= maximum else {
                throw LegacyAPNsError(
                    .malformedInput,
                    "\"\(name)\" must be a whole number from 0 to \(maximum), got \(String(decoding: value, as: UTF8.self))"
                )
            }
            result = sum
        }
        return result
    }
}
