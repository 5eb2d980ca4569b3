/// An incremental decoder for legacy APNs streams: commands 0, 1, 2 and the error response (8).
///
/// Feed it bytes in any split with `append(_:)` and pull frames with ``next()``:
/// - `nil` means more bytes are needed; nothing is consumed on short input;
/// - a ``Frame`` means one complete, valid frame was consumed;
/// - a thrown ``FrameDecodingError`` means the bytes are invalid. It carries the status a gateway
///   would answer and the byte offset. The decoder then stays failed (a gateway stops reading too).
///
/// At the end of the stream call ``finish()``: a frame cut short is an error, never dropped.
///
/// Checks match the gateway's statuses: token length 0 is 2 (missing device token), a token of
/// the wrong size 5, payload length 0 is 4, a payload over the limit 7, and anything that cannot
/// be parsed (unknown command or item, duplicated item, wrong item size, items overrunning the
/// frame) 128. Oversized length fields are judged as soon as they are read, so hostile lengths
/// never make the decoder buffer more than one valid frame.
///
/// One decoder serves the gateway simulator (notifications only), senders reading error
/// responses (error responses only) and tools that read fixture files (both).
public struct FrameDecoder: Sendable {
    /// What the decoder accepts and how strict it is.
    public struct Configuration: Hashable, Sendable {
        /// Payloads larger than this are status 7.
        public var maximumPayloadSize: Int
        /// Whether commands 0, 1 and 2 are valid here.
        public var acceptsNotifications: Bool
        /// Whether command 8 is valid here.
        public var acceptsErrorResponses: Bool

        /// Creates a configuration.
        public init(
            maximumPayloadSize: Int = Payload.defaultMaximumSize, acceptsNotifications: Bool,
            acceptsErrorResponses: Bool
        ) {
            self.maximumPayloadSize = maximumPayloadSize
            self.acceptsNotifications = acceptsNotifications
            self.acceptsErrorResponses = acceptsErrorResponses
        }

        /// What a gateway reads from a provider: notifications only.
        public static let gateway = Configuration(acceptsNotifications: true, acceptsErrorResponses: false)
        /// What a provider reads from a gateway: error responses only.
        public static let provider = Configuration(acceptsNotifications: false, acceptsErrorResponses: true)
        /// Everything, for reading captures and fixtures.
        public static let any = Configuration(acceptsNotifications: true, acceptsErrorResponses: true)
    }

    /// What this decoder accepts.
    public let configuration: Configuration
    private var buffer: [UInt8] = []
    private var readIndex = 0
    private var failure: FrameDecodingError?

    /// Absolute stream offset of the next undecoded byte (bytes consumed so far).
    public private(set) var consumedByteCount = 0

    /// Creates a decoder with an empty buffer.
    public init(configuration: Configuration = .any) {
        self.configuration = configuration
    }

    /// Bytes received but not yet decoded.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// Adds received bytes in memory (the connection's read buffer).
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Adds received bytes.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    private mutating func compact() {
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        } else if readIndex >= 4096, readIndex * 2 >= buffer.count {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
    }

    /// Decodes the next frame, or returns nil when more bytes are needed.
    public mutating func next() throws(FrameDecodingError) -> Frame? {
        if let failure { throw failure }
        let configuration = self.configuration
        let start = readIndex
        let step = buffer.withUnsafeBytes { raw in
            Self.parse(UnsafeRawBufferPointer(rebasing: raw[start...]), configuration: configuration)
        }
        switch step {
        case .needMore:
            return nil
        case .frame(let frame, let length):
            readIndex += length
            consumedByteCount += length
            return frame
        case .invalid(let problem):
            let error = self.error(problem)
            failure = error
            throw error
        }
    }

    /// An error the frame now arriving cannot escape, judged from its bytes so far, or nil (no
    /// frame begun, or bytes still to come could make it valid). Consumes nothing.
    ///
    /// ``next()`` waits for a command 2 frame of plausible length to be complete before judging
    /// it, so that its verdict names the identifier (item 3, which usually follows the payload)
    /// however the bytes were split. A server asks this when the sender has paused mid-frame, to
    /// answer a frame no further bytes can make valid at once instead of waiting for them: an
    /// item frame longer than any valid one (status 7), a token or payload item of a length this
    /// decoder refuses, an item that is unknown, repeated or overruns the frame. The error is the
    /// first bad item's (the complete frame might have shown another fault first) and names the
    /// identifier if its item has arrived (0 otherwise).
    public var pendingFailure: FrameDecodingError? {
        guard failure == nil, bufferedByteCount > 0 else { return nil }
        let configuration = self.configuration
        let start = readIndex
        let step = buffer.withUnsafeBytes { raw in
            Self.parse(
                UnsafeRawBufferPointer(rebasing: raw[start...]), configuration: configuration, judgingIncomplete: true)
        }
        guard case .invalid(let problem) = step else { return nil }
        return error(problem)
    }

    /// The error for `problem` in the frame at the read index.
    private func error(_ problem: Problem) -> FrameDecodingError {
        let base = consumedByteCount
        let start = readIndex
        var error = FrameDecodingError(
            status: problem.status, identifier: problem.identifier, offset: base + problem.offset,
            frameOffset: base, reason: problem.reason, command: Command(rawValue: buffer[start]))
        error.isConfirmationBarrier =
            problem.status == ConfirmationBarrier.expectedStatus
            && buffer.withUnsafeBytes {
                ConfirmationBarrier.matches(UnsafeRawBufferPointer(rebasing: $0[start...]))
            }
        return error
    }

    /// Declares the end of the stream: throws if bytes of an incomplete frame remain.
    public func finish() throws(FrameDecodingError) {
        if let failure { throw failure }
        let remaining = bufferedByteCount
        guard remaining > 0 else { return }
        let expected = buffer.withUnsafeBytes { raw in
            Self.expectedLength(UnsafeRawBufferPointer(rebasing: raw[readIndex...]))
        }
        let command = Command(rawValue: buffer[readIndex])
        let need = expected.map { ", expected \($0)" } ?? ""
        throw FrameDecodingError(
            status: .protocolError, identifier: 0, offset: consumedByteCount + remaining,
            frameOffset: consumedByteCount,
            reason: "stream ends inside a frame: \(remaining) bytes of a \(command) frame\(need)", isTruncation: true,
            command: command)
    }

    // MARK: - Parsing (pure functions over the buffered bytes)

    struct Problem {
        var status: StatusCode
        var identifier: UInt32
        var offset: Int
        var reason: String
    }

    enum Step {
        case needMore
        case frame(Frame, length: Int)
        case invalid(Problem)
    }

    /// `judgingIncomplete`: an incomplete frame that no further bytes can make valid is invalid
    /// now (``pendingFailure``), rather than waiting for more.
    static func parse(
        _ bytes: UnsafeRawBufferPointer, configuration: Configuration, judgingIncomplete: Bool = false
    ) -> Step {
        guard let first = bytes.first else { return .needMore }
        let command = Command(rawValue: first)
        switch command {
        case .simple, .enhanced, .itemized:
            guard configuration.acceptsNotifications else {
                return .invalid(
                    Problem(
                        status: .protocolError, identifier: 0, offset: 0,
                        reason: "unexpected \(command) frame where only error responses are valid"))
            }
            if command == .itemized {
                return parseItemized(
                    bytes, maximumPayloadSize: configuration.maximumPayloadSize, judgingIncomplete: judgingIncomplete)
            }
            return parseFlat(bytes, command: command, maximumPayloadSize: configuration.maximumPayloadSize)
        case .errorResponse:
            guard configuration.acceptsErrorResponses else {
                return .invalid(
                    Problem(
                        status: .protocolError, identifier: 0, offset: 0,
                        reason: "unexpected error response (command 8) from a provider"))
            }
            var reader = ByteReader(bytes, readerIndex: 1)
            guard let status = reader.readInteger(as: UInt8.self), let identifier = reader.readInteger(as: UInt32.self)
            else {
                return .needMore
            }
            return .frame(
                .errorResponse(ErrorResponse(status: StatusCode(rawValue: status), identifier: identifier)), length: 6)
        default:
            return .invalid(
                Problem(status: .protocolError, identifier: 0, offset: 0, reason: "unknown command byte \(first)"))
        }
    }

    /// Commands 0 and 1: fixed header, then token and payload with 2-byte lengths.
    private static func parseFlat(_ bytes: UnsafeRawBufferPointer, command: Command, maximumPayloadSize: Int) -> Step {
        let reader = ByteReader(bytes)
        let isEnhanced = command == .enhanced
        let tokenLengthOffset = isEnhanced ? FrameLayout.Enhanced.tokenLength : FrameLayout.Simple.tokenLength
        guard let tokenLength = reader.getInteger(at: tokenLengthOffset, as: UInt16.self) else { return .needMore }
        let identifier = isEnhanced ? reader.getInteger(at: FrameLayout.Enhanced.identifier, as: UInt32.self)! : 0
        let expiry = isEnhanced ? reader.getInteger(at: FrameLayout.Enhanced.expiry, as: UInt32.self)! : 0
        if tokenLength == 0 {
            // A ConfirmationBarrier has payload length 0 too: wait for it, so a barrier split
            // between reads is told apart (FrameDecodingError.isConfirmationBarrier) all the same.
            if isEnhanced, bytes.count < ConfirmationBarrier.byteCount { return .needMore }
            return .invalid(
                Problem(
                    status: .missingDeviceToken, identifier: identifier, offset: tokenLengthOffset,
                    reason: "token length is 0"))
        }
        if Int(tokenLength) != DeviceToken.standardByteCount {
            return .invalid(
                Problem(
                    status: .invalidTokenSize, identifier: identifier, offset: tokenLengthOffset,
                    reason: "token length is \(tokenLength), expected \(DeviceToken.standardByteCount)"))
        }
        let payloadLengthOffset = tokenLengthOffset + 2 + Int(tokenLength)
        guard let payloadLength = reader.getInteger(at: payloadLengthOffset, as: UInt16.self) else { return .needMore }
        if payloadLength == 0 {
            return .invalid(
                Problem(
                    status: .missingPayload, identifier: identifier, offset: payloadLengthOffset,
                    reason: "payload length is 0"))
        }
        if Int(payloadLength) > maximumPayloadSize {
            return .invalid(
                Problem(
                    status: .invalidPayloadSize, identifier: identifier, offset: payloadLengthOffset,
                    reason: "payload length is \(payloadLength), the limit is \(maximumPayloadSize)"))
        }
        let total = payloadLengthOffset + 2 + Int(payloadLength)
        guard bytes.count >= total else { return .needMore }
        let token = DeviceToken(
            validatedBytes: UnsafeRawBufferPointer(rebasing: bytes[(tokenLengthOffset + 2)..<payloadLengthOffset]))
        let payload = Payload(unvalidatedBytes: Array(bytes[(payloadLengthOffset + 2)..<total]))
        let notification = PushNotification(
            token: token, payload: payload, identifier: isEnhanced ? identifier : nil,
            expiration: isEnhanced ? Expiration(rawValue: expiry) : nil, priority: nil)
        return .frame(.notification(notification, command: command), length: total)
    }

    /// The largest frame length a valid command 2 frame can declare under `maximumPayloadSize`.
    static func maximumItemFrameLength(maximumPayloadSize: Int) -> Int {
        typealias Layout = FrameLayout.Itemized
        return (Layout.itemHeader + DeviceToken.maximumByteCount) + (Layout.itemHeader + maximumPayloadSize)
            + (Layout.itemHeader + Layout.identifierSize) + (Layout.itemHeader + Layout.expirySize)
            + (Layout.itemHeader + Layout.prioritySize)
    }

    /// Command 2: `02 | frame length (4) | items`.
    ///
    /// A frame of plausible length is judged once it is complete, so the identifier (item 3, which
    /// usually follows the token and payload) is known for every error. A frame whose length field
    /// exceeds what any valid frame can have is judged item by item as bytes arrive; when
    /// `judgingIncomplete`, every frame is, and an oversized one whose items stop short is status 7.
    private static func parseItemized(
        _ bytes: UnsafeRawBufferPointer, maximumPayloadSize: Int, judgingIncomplete: Bool = false
    ) -> Step {
        typealias Layout = FrameLayout.Itemized
        let reader = ByteReader(bytes)
        guard let frameLength = reader.getInteger(at: Layout.frameLength, as: UInt32.self) else { return .needMore }
        let largest = maximumItemFrameLength(maximumPayloadSize: maximumPayloadSize)
        let isOversized = Int(frameLength) > largest
        let judgesItems = isOversized || judgingIncomplete
        let frameEnd = Layout.header + Int(frameLength)
        if !judgesItems, bytes.count < frameEnd { return .needMore }

        var identifier: UInt32? = nil
        var tokenItem: (offset: Int, range: Range<Int>)? = nil
        var payloadItem: (offset: Int, range: Range<Int>)? = nil
        var expiry: UInt32? = nil
        var priority: UInt8? = nil
        var seen: UInt8 = 0
        var index = Layout.items

        func problem(_ status: StatusCode, _ offset: Int, _ reason: String) -> Step {
            .invalid(Problem(status: status, identifier: identifier ?? 0, offset: offset, reason: reason))
        }
        /// The bytes stop inside the frame.
        func incomplete() -> Step {
            guard judgingIncomplete, isOversized else { return .needMore }
            return problem(
                .invalidPayloadSize, Layout.frameLength,
                "frame length is \(frameLength), more than any valid frame (\(largest) bytes)")
        }

        while index < frameEnd {
            guard let itemByte = reader.getInteger(at: index, as: UInt8.self),
                let itemLength = reader.getInteger(at: index + 1, as: UInt16.self)
            else { return incomplete() }
            let itemID = ItemID(rawValue: itemByte)
            let dataStart = index + Layout.itemHeader
            let dataEnd = dataStart + Int(itemLength)
            if dataStart > frameEnd || dataEnd > frameEnd {
                return problem(
                    .protocolError, index, "item \(itemByte) of \(itemLength) bytes runs past the end of the frame")
            }
            guard ItemID.known.contains(itemByte) else {
                return problem(.protocolError, index, "unknown item id \(itemByte)")
            }
            let bit: UInt8 = 1 << itemByte
            guard seen & bit == 0 else {
                return problem(.protocolError, index, "item \(itemByte) appears twice")
            }
            seen |= bit
            switch itemID {
            case .token:
                if judgesItems, let early = tokenProblem(length: Int(itemLength), at: index) {
                    return problem(early.status, index, early.reason)
                }
                tokenItem = (index, dataStart..<dataEnd)
            case .payload:
                if judgesItems, let early = payloadProblem(length: Int(itemLength), limit: maximumPayloadSize) {
                    return problem(early.status, index, early.reason)
                }
                payloadItem = (index, dataStart..<dataEnd)
            default:  // identifier, expiry, priority: fixed sizes
                let expected = itemID == .priority ? Layout.prioritySize : Layout.identifierSize
                guard Int(itemLength) == expected else {
                    return problem(
                        .protocolError, index, "item \(itemByte) has \(itemLength) bytes, expected \(expected)")
                }
                guard bytes.count >= dataEnd else { return incomplete() }
                switch itemID {
                case .identifier: identifier = reader.getInteger(at: dataStart, as: UInt32.self)
                case .expiry: expiry = reader.getInteger(at: dataStart, as: UInt32.self)
                default: priority = bytes[dataStart]
                }
            }
            if judgesItems, bytes.count < dataEnd { return incomplete() }
            index = dataEnd
        }

        guard let tokenItem else { return problem(.missingDeviceToken, 1, "frame has no token item") }
        if let issue = tokenProblem(length: tokenItem.range.count, at: tokenItem.offset) {
            return problem(issue.status, tokenItem.offset, issue.reason)
        }
        guard let payloadItem else { return problem(.missingPayload, 1, "frame has no payload item") }
        if let issue = payloadProblem(length: payloadItem.range.count, limit: maximumPayloadSize) {
            return problem(issue.status, payloadItem.offset, issue.reason)
        }
        let notification = PushNotification(
            token: DeviceToken(validatedBytes: UnsafeRawBufferPointer(rebasing: bytes[tokenItem.range])),
            payload: Payload(unvalidatedBytes: Array(bytes[payloadItem.range])),
            identifier: identifier,
            expiration: expiry.map(Expiration.init(rawValue:)),
            priority: priority.map(Priority.init(rawValue:)))
        return .frame(.notification(notification, command: .itemized), length: frameEnd)
    }

    private static func tokenProblem(length: Int, at offset: Int) -> (status: StatusCode, reason: String)? {
        if length == 0 { return (.missingDeviceToken, "token item is empty") }
        if length > DeviceToken.maximumByteCount {
            return (
                .invalidTokenSize, "token item has \(length) bytes, at most \(DeviceToken.maximumByteCount) are allowed"
            )
        }
        return nil
    }

    private static func payloadProblem(length: Int, limit: Int) -> (status: StatusCode, reason: String)? {
        if length == 0 { return (.missingPayload, "payload item is empty") }
        if length > limit { return (.invalidPayloadSize, "payload item has \(length) bytes, the limit is \(limit)") }
        return nil
    }

    /// The full length of the frame starting at `bytes`, when its header says.
    static func expectedLength(_ bytes: UnsafeRawBufferPointer) -> Int? {
        let reader = ByteReader(bytes)
        switch Command(rawValue: bytes[0]) {
        case .simple:
            typealias Layout = FrameLayout.Simple
            guard let token = reader.getInteger(at: Layout.tokenLength, as: UInt16.self),
                let payload = reader.getInteger(at: Layout.payloadLength(tokenCount: Int(token)), as: UInt16.self)
            else { return nil }
            return Layout.overhead + Int(token) + Int(payload)
        case .enhanced:
            typealias Layout = FrameLayout.Enhanced
            guard let token = reader.getInteger(at: Layout.tokenLength, as: UInt16.self),
                let payload = reader.getInteger(at: Layout.payloadLength(tokenCount: Int(token)), as: UInt16.self)
            else { return nil }
            return Layout.overhead + Int(token) + Int(payload)
        case .itemized:
            typealias Layout = FrameLayout.Itemized
            return reader.getInteger(at: Layout.frameLength, as: UInt32.self).map { Layout.header + Int($0) }
        case .errorResponse:
            return ErrorResponse.byteCount
        default:
            return nil
        }
    }
}
