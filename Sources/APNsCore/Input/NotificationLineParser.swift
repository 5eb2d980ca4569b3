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
/// - HTTP/2 only: `liveActivity` (instead of `payload`): the `aps` of a Live Activity
///   (`{"event":"update","timestamp":...,"content-state":{...}}`), sent as
///   `{"aps":<the object>}` with push type `liveactivity`, and a `topic` of the line given the
///   `.push-type.liveactivity` suffix when it has none.
///
/// Blank lines are skipped. Anything else (unknown keys, repeated keys, wrong types) is an error
/// naming the line, so a typo never sends something unintended. The parser works on bytes and
/// builds no object graph: it is the fast path for million-line inputs.
public struct NotificationLineParser: Sendable {
    /// Which fields a line may carry.
    public enum Dialect: Hashable, Sendable {
        /// The binary protocol's: token, payload, id, expiry, priority (10 or 5).
        case binary
        /// The HTTP/2 API's: those, plus `topic`, `pushType`, `collapseId`, `apnsId` and
        /// `liveActivity`, and priority 1.
        case http2
    }

    /// The fields this parser accepts.
    public let dialect: Dialect

    /// Creates a parser (it has no state beyond its dialect).
    public init(dialect: Dialect = .binary) {
        self.dialect = dialect
    }

    /// Parses one line (without its newline). Returns nil for a blank line.
    ///
    /// - Throws: ``LegacyAPNsError/Code-swift.struct/malformedInput``: "line 3: ...".
    public func parse(_ line: String, lineNumber: Int) throws -> PushNotification? {
        var copy = line
        return try copy.withUTF8 { try parse(UnsafeRawBufferPointer($0), lineNumber: lineNumber) }
    }

    /// Parses one line's bytes (without the newline). Returns nil for a blank line.
    public func parse(_ line: some Collection<UInt8>, lineNumber: Int) throws -> PushNotification? {
        try withContiguousBytes(line) { try parse($0, lineNumber: lineNumber) }
    }

    /// Parses one line's bytes in memory (without the newline). Returns nil for a blank line.
    package func parse(_ line: UnsafeRawBufferPointer, lineNumber: Int) throws -> PushNotification? {
        try fields(line, lineNumber: lineNumber).map { $0.notification(in: line) }
    }

    /// Parses one line with the full parser alone, never ``fastFields(_:)`` (what the fast path
    /// is checked against).
    package func parseWithoutFastPath(_ line: UnsafeRawBufferPointer, lineNumber: Int) throws -> PushNotification? {
        try fields(line, lineNumber: lineNumber, fastPath: false).map { $0.notification(in: line) }
    }

    /// Parses one line and hands its fields to `body` without building a ``PushNotification``:
    /// the payload is a view into the line (or into its decoded string), valid only inside `body`.
    /// Returns nil for a blank line. This is the allocation-free path for streaming large inputs.
    package func withParsedLine<Result>(
        _ line: UnsafeRawBufferPointer, lineNumber: Int, _ body: (ParsedLine) throws -> Result
    ) throws -> Result? {
        guard let fields = try fields(line, lineNumber: lineNumber) else { return nil }
        if let decoded = fields.decodedPayload {
            return try decoded.withUnsafeBytes { try body(ParsedLine(fields: fields, payload: $0)) }
        }
        return try body(
            ParsedLine(fields: fields, payload: UnsafeRawBufferPointer(rebasing: line[fields.payloadRange])))
    }

    /// The fields of one input line; ``payload`` is only valid inside
    /// ``withParsedLine(_:lineNumber:_:)``.
    package struct ParsedLine {
        /// The device token.
        package var token: DeviceToken
        /// The payload's bytes, valid only inside the closure.
        package var payload: UnsafeRawBufferPointer
        /// The line's `id`, or its line number.
        package var identifier: UInt32
        /// The line's `id` if it has one (nil: ``identifier`` is the line number).
        package var givenIdentifier: UInt32?
        /// The line's `expiry`, if any.
        package var expiration: Expiration?
        /// The line's `priority`, if any.
        package var priority: Priority?
        /// HTTP/2: the line's `topic`, if any.
        package var topic: String?
        /// HTTP/2: the line's `pushType`, if any.
        package var pushType: PushType?
        /// HTTP/2: the line's `collapseId`, if any.
        package var collapseID: String?
        /// HTTP/2: the line's `apnsId`, if any.
        package var apnsID: APNsID?

        init(fields: Fields, payload: UnsafeRawBufferPointer) {
            token = fields.token
            self.payload = payload
            identifier = fields.identifier
            givenIdentifier = fields.givenIdentifier
            expiration = fields.expiration
            priority = fields.priority
            topic = fields.extra?.topic
            pushType = fields.extra?.pushType
            collapseID = fields.extra?.collapseID
            apnsID = fields.extra?.apnsID
        }

        /// Checks that `encoder` can put this notification in a frame of `format`.
        package func validate(encoder: FrameEncoder, format: FrameFormat) throws {
            if format != .itemized, token.count != DeviceToken.standardByteCount {
                throw DeviceToken.wrongLength(token.count, format: format.rawValue)
            }
            let limit = Swift.min(encoder.maximumPayloadSize, Int(UInt16.max))
            if payload.count > limit {
                throw LegacyAPNsError(.payloadTooLarge, "payload has \(payload.count) bytes, the limit is \(limit)")
            }
        }
    }

    /// A parsed line: everything but the payload bytes, which stay in the line when they can.
    struct Fields {
        var token: DeviceToken
        /// Where the payload object is in the line.
        var payloadRange: Range<Int>
        /// The payload when it was given as a JSON string (then decoded and validated).
        var decodedPayload: [UInt8]?
        var identifier: UInt32
        var givenIdentifier: UInt32?
        var expiration: Expiration?
        var priority: Priority?
        /// The HTTP/2 fields, when the line has any.
        var extra: HTTP2Fields?

        func notification(in line: UnsafeRawBufferPointer) -> PushNotification {
            let payload = decodedPayload ?? Array(UnsafeRawBufferPointer(rebasing: line[payloadRange]))
            return PushNotification(
                token: token, payload: Payload(unvalidatedBytes: payload), identifier: identifier,
                expiration: expiration, priority: priority)
        }
    }

    /// Why a line is not a notification: its number, and what is wrong in words without the
    /// number (so a caller that numbers lines differently can say "line N: ..." itself). It is the
    /// ``LegacyAPNsError/underlying`` of every error the parser throws.
    public struct LineError: Error, Hashable, Sendable {
        /// The line number the parser was given.
        public var line: Int
        /// What is wrong.
        public var reason: String

        /// Creates a line error.
        public init(line: Int, reason: String) {
            self.line = line
            self.reason = reason
        }

        /// The error as the library throws it: "line N: reason".
        public var error: LegacyAPNsError {
            LegacyAPNsError(.malformedInput, "line \(line): \(reason)", underlying: self)
        }
    }

    private func fields(_ line: UnsafeRawBufferPointer, lineNumber: Int, fastPath: Bool = true) throws -> Fields? {
        if fastPath, let fast = fastFields(line) {
            return Fields(
                token: fast.token, payloadRange: fast.payload, decodedPayload: nil,
                identifier: fast.identifier ?? UInt32(truncatingIfNeeded: lineNumber), givenIdentifier: fast.identifier,
                expiration: fast.expiration, priority: fast.priority, extra: nil)
        }
        do {
            return try parseFields(line, lineNumber: lineNumber)
        } catch let failure as JSONScanner.Failure {
            throw LineError(
                line: lineNumber, reason: "invalid JSON: \(failure.message) at column \(failure.offset + 1)"
            ).error
        } catch let error as LegacyAPNsError {
            throw LineError(line: lineNumber, reason: error.reason).error
        }
    }

    /// The HTTP/2 dialect's extra fields.
    struct HTTP2Fields {
        var topic: String?
        var pushType: PushType?
        var collapseID: String?
        var apnsID: APNsID?
    }

    private enum Key: UInt16 {
        case token = 1
        case payload = 2
        case id = 4
        case expiry = 8
        case priority = 16
        case topic = 32
        case pushType = 64
        case collapseID = 128
        case apnsID = 256
        case liveActivity = 512

        var isHTTP2Only: Bool { rawValue >= Key.topic.rawValue }
    }

    private func parseFields(_ bytes: UnsafeRawBufferPointer, lineNumber: Int) throws -> Fields? {
        var index = JSONScanner.skipWhitespace(bytes, from: 0)
        if index == bytes.count { return nil }
        guard bytes[index] == UInt8(ascii: "{") else {
            throw LegacyAPNsError(
                .malformedInput, "expected a JSON object, found \(JSONScanner.describe(bytes, at: index))")
        }
        var seen: UInt16 = 0
        var extra: HTTP2Fields?
        var token: DeviceToken?
        var payload: (range: Range<Int>, decoded: [UInt8]?)?
        var identifier: UInt32?
        var expiration: Expiration?
        var priority: Priority?
        var liveActivity: [UInt8]?

        // One pass: every key and value is validated as it is read.
        index = JSONScanner.skipWhitespace(bytes, from: index + 1)
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
        } else {
            while true {
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw JSONScanner.Failure(
                        offset: index,
                        message: index < bytes.count
                            ? "unexpected \(JSONScanner.describe(bytes, at: index)), expected a string key"
                            : "unexpected end of JSON in an object")
                }
                let keyEnd = try JSONScanner.skipString(bytes, from: index)
                let key = try Self.key(bytes, from: index, to: keyEnd, dialect: dialect)
                if seen & key.rawValue != 0 {
                    throw LegacyAPNsError(.malformedInput, "key \"\(Self.name(of: key))\" appears twice")
                }
                seen |= key.rawValue
                index = JSONScanner.skipWhitespace(bytes, from: keyEnd)
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                    throw JSONScanner.Failure(
                        offset: index, message: "unexpected \(JSONScanner.describe(bytes, at: index)), expected ':'")
                }
                let valueStart = JSONScanner.skipWhitespace(bytes, from: index + 1)
                let valueEnd = try JSONScanner.skipValue(bytes, from: valueStart, depth: 1)
                if key == .liveActivity {
                    guard bytes[valueStart] == UInt8(ascii: "{") else {
                        throw typeError("liveActivity", "a JSON object (the aps of a Live Activity)")
                    }
                    liveActivity = Array(#"{"aps":"#.utf8) + bytes[valueStart..<valueEnd] + [UInt8(ascii: "}")]
                } else if key.isHTTP2Only {
                    try readHTTP2(key, UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd]), into: &extra)
                } else {
                    try read(key, bytes, valueStart, valueEnd, &token, &payload, &identifier, &expiration, &priority)
                }
                index = JSONScanner.skipWhitespace(bytes, from: valueEnd)
                guard index < bytes.count else {
                    throw JSONScanner.Failure(offset: index, message: "unexpected end of JSON in an object")
                }
                if bytes[index] == UInt8(ascii: ",") {
                    index = JSONScanner.skipWhitespace(bytes, from: index + 1)
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else {
                    throw JSONScanner.Failure(
                        offset: index,
                        message: "unexpected \(JSONScanner.describe(bytes, at: index)), expected ',' or '}'")
                }
                index += 1
                break
            }
        }
        let trailing = JSONScanner.skipWhitespace(bytes, from: index)
        if trailing < bytes.count {
            throw LegacyAPNsError(
                .malformedInput, "unexpected \(JSONScanner.describe(bytes, at: trailing)) after the object")
        }
        guard let token else { throw LegacyAPNsError(.malformedInput, "missing \"token\"") }
        if let liveActivity {
            guard payload == nil else {
                throw LegacyAPNsError(.malformedInput, "give \"payload\" or \"liveActivity\", not both")
            }
            var fields = extra ?? HTTP2Fields()
            if let type = fields.pushType, type != .liveActivity {
                throw LegacyAPNsError(
                    .malformedInput, "a \"liveActivity\" line is of pushType liveactivity, not \(type)")
            }
            fields.pushType = .liveActivity
            if let topic = fields.topic, let suffix = PushType.liveActivity.requiredTopicSuffix,
                !topic.hasSuffix(suffix)
            {
                fields.topic = topic + suffix
            }
            extra = fields
            payload = (0..<0, liveActivity)
        }
        guard let payload else {
            throw LegacyAPNsError(
                .malformedInput, dialect == .http2 ? "missing \"payload\" (or \"liveActivity\")" : "missing \"payload\""
            )
        }
        return Fields(
            token: token, payloadRange: payload.range, decodedPayload: payload.decoded,
            identifier: identifier ?? UInt32(truncatingIfNeeded: lineNumber), givenIdentifier: identifier,
            expiration: expiration, priority: priority, extra: extra
        )
    }

    private func read(
        _ key: Key, _ bytes: UnsafeRawBufferPointer, _ valueStart: Int, _ valueEnd: Int, _ token: inout DeviceToken?,
        _ payload: inout (range: Range<Int>, decoded: [UInt8]?)?, _ identifier: inout UInt32?,
        _ expiration: inout Expiration?,
        _ priority: inout Priority?
    ) throws {
        let value = UnsafeRawBufferPointer(rebasing: bytes[valueStart..<valueEnd])
        switch key {
        case .token:
            guard value[0] == UInt8(ascii: "\"") else { throw typeError("token", "a string of hex digits") }
            if JSONScanner.isPlainString(bytes, from: valueStart, to: valueEnd) {
                token = try DeviceToken(
                    hexBytes: UnsafeRawBufferPointer(rebasing: bytes[(valueStart + 1)..<(valueEnd - 1)]))
            } else {
                var text: [UInt8] = []
                JSONScanner.decodeString(bytes, from: valueStart, to: valueEnd, into: &text)
                token = try text.withUnsafeBytes { try DeviceToken(hexBytes: $0) }
            }
        case .payload:
            switch value[0] {
            case UInt8(ascii: "{"):
                payload = (valueStart..<valueEnd, nil)
            case UInt8(ascii: "\""):
                var text: [UInt8] = []
                JSONScanner.decodeString(bytes, from: valueStart, to: valueEnd, into: &text)
                try text.withUnsafeBytes { try Payload.validate($0) }
                payload = (valueStart..<valueEnd, text)
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
                priority =
                    dialect == .http2 ? try Priority(validatingHTTP2: Int(value)) : try Priority(validating: Int(value))
            }
        case .topic, .pushType, .collapseID, .apnsID, .liveActivity:
            preconditionFailure("HTTP/2 fields are read by readHTTP2")
        }
    }

    /// `topic`, `pushType`, `collapseId` (strings) and `apnsId` (a UUID string); `null` is absent.
    private func readHTTP2(_ key: Key, _ value: UnsafeRawBufferPointer, into extra: inout HTTP2Fields?) throws {
        if value.elementsEqual("null".utf8) { return }
        let name = Self.name(of: key)
        guard value.first == UInt8(ascii: "\"") else { throw typeError(name, "a string") }
        var decoded: [UInt8] = []
        JSONScanner.decodeString(value, from: 0, to: value.count, into: &decoded)
        let text = String(decoding: decoded, as: UTF8.self)
        var fields = extra ?? HTTP2Fields()
        switch key {
        case .topic: fields.topic = text
        case .pushType: fields.pushType = PushType(rawValue: text)
        case .collapseID: fields.collapseID = text
        case .apnsID:
            guard let id = APNsID(text) else {
                throw typeError(name, "a UUID such as 123e4567-e89b-12d3-a456-426614174000, not '\(text)'")
            }
            fields.apnsID = id
        case .token, .payload, .id, .expiry, .priority, .liveActivity:
            preconditionFailure("not a string field of the HTTP/2 dialect")
        }
        extra = fields
    }

    private func typeError(_ key: String, _ expected: String) -> LegacyAPNsError {
        LegacyAPNsError(.malformedInput, "\"\(key)\" must be \(expected)")
    }

    private static func key(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int, dialect: Dialect) throws
        -> Key
    {
        let name = UnsafeRawBufferPointer(rebasing: bytes[(start + 1)..<(end - 1)])
        // The binary keys have five different lengths; the HTTP/2 ones share some of them.
        let candidates: (Key, Key?)? =
            switch name.count {
            case 5: (.token, .topic)
            case 7: (.payload, nil)
            case 2: (.id, nil)
            case 6: (.expiry, .apnsID)
            case 8: (.priority, .pushType)
            case 10: (.collapseID, nil)
            case 12: (.liveActivity, nil)
            default: nil
            }
        if let (first, second) = candidates {
            if dialect == .http2 || !first.isHTTP2Only, Self.name(of: first).utf8.elementsEqual(name) { return first }
            if let second, dialect == .http2, Self.name(of: second).utf8.elementsEqual(name) { return second }
        }
        var decoded: [UInt8] = []
        JSONScanner.decodeString(bytes, from: start, to: end, into: &decoded)
        let expected =
            dialect == .http2
            ? "token, payload, id, expiry, priority, topic, pushType, collapseId, apnsId, liveActivity"
            : "token, payload, id, expiry, priority"
        throw LegacyAPNsError(
            .malformedInput, "unknown key \"\(String(decoding: decoded, as: UTF8.self))\" (expected \(expected))")
    }

    private static func name(of key: Key) -> String {
        switch key {
        case .token: "token"
        case .payload: "payload"
        case .id: "id"
        case .expiry: "expiry"
        case .priority: "priority"
        case .topic: "topic"
        case .pushType: "pushType"
        case .collapseID: "collapseId"
        case .apnsID: "apnsId"
        case .liveActivity: "liveActivity"
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
