extension ProviderRequest {
    /// What APNs would refuse, found without a round trip: the reason it would answer and the
    /// fix in words, or nil when the request is fine as far as the client can tell.
    ///
    /// Checked, in this order: an empty payload (PayloadEmpty), a payload over the push type's
    /// limit (PayloadTooLarge: 4096 bytes, 5120 for `voip`), a priority other than 10, 5 and 1
    /// (BadPriority), a priority the push type does not allow (BadPriority: `background` 5 only,
    /// `liveactivity` 5 or 10), a topic without the suffix the push type requires (BadTopic), a
    /// collapse id over 64 bytes (BadCollapseId), with token auth a missing topic (MissingTopic),
    /// without it a token-only type (`location`, `liveactivity`: TopicDisallowed), and last the
    /// payload's contents where the type has rules (``PushType/problem(payload:)``: `widgets`,
    /// `liveactivity`). The device token's size is checked when the request is made.
    public func problem(usesTokens: Bool) -> (reason: ProviderReason, explanation: String)? {
        if let found = Self.problem(
            payloadCount: payload.count, pushType: pushType, priority: priority, topic: topic, collapseID: collapseID,
            usesTokens: usesTokens)
        {
            return found
        }
        return (pushType ?? .alert).problem(payload: payload)
    }

    /// ``problem(usesTokens:)`` from the fields it looks at, less the payload's contents, for a
    /// check that has no request (the JSON Lines check of `send --http2`, which would otherwise
    /// copy every payload, and asks ``PushType/problem(payload:)`` itself where it matters).
    package static func problem(
        payloadCount: Int, pushType: PushType?, priority: Priority?, topic: String?, collapseID: String?,
        usesTokens: Bool
    ) -> (reason: ProviderReason, explanation: String)? {
        let type = pushType ?? .alert
        if payloadCount == 0 { return (.payloadEmpty, "the payload is empty") }
        if payloadCount > type.maximumPayloadSize {
            return (
                .payloadTooLarge,
                "the payload has \(payloadCount) bytes; APNs takes at most \(type.maximumPayloadSize) for \(type) pushes"
            )
        }
        if let priority, ![10, 5, 1].contains(priority.rawValue) {
            return (.badPriority, "priority \(priority.rawValue) is not 10, 5 or 1")
        }
        if let priority, let found = type.problem(priority: priority) { return found }
        if let suffix = type.requiredTopicSuffix, let topic, !topic.hasSuffix(suffix) {
            return (.badTopic, "\(type) pushes need a topic ending in \(suffix), got '\(topic)'")
        }
        if let collapseID, collapseID.utf8.count > 64 {
            return (.badCollapseId, "the collapse id has \(collapseID.utf8.count) bytes, at most 64 are allowed")
        }
        if usesTokens, topic == nil {
            return (.missingTopic, "token authentication needs a topic (the app's bundle id)")
        }
        return type.problem(usesTokens: usesTokens)
    }
}

extension PushType {
    /// The push type a payload implies when none is given: `background` when its `aps` holds
    /// only `content-available`, `alert` otherwise (what `send --http2` and the bridge assume).
    public static func inferred(for payload: Payload) -> PushType {
        payload.bytes.withUnsafeBytes { inferred(forJSON: $0) }
    }

    /// ``inferred(for:)`` for a payload's bytes (checked JSON, not copied into a ``Payload``).
    package static func inferred(forJSON bytes: UnsafeRawBufferPointer) -> PushType {
        // Background needs an `aps` holding only "content-available": a payload without that
        // text (and without escapes, which could spell it) is an alert, found without parsing.
        guard mayNameContentAvailable(bytes) else { return .alert }
        guard let members = try? JSONScanner.objectMembers(bytes),
            let aps = members.first(where: { $0.key == "aps" })
        else { return .alert }
        let apsBytes = UnsafeRawBufferPointer(rebasing: bytes[aps.value])
        guard let keys = try? JSONScanner.objectMembers(apsBytes).map(\.key) else { return .alert }
        return keys == ["content-available"] ? .background : .alert
    }

    /// Whether `bytes` contain `content-available` or a backslash (an escape could spell it).
    /// Eight bytes at a time, looking for the two bytes that matter: a backslash, and the hyphen
    /// of `content-available` (payloads rarely hold either).
    package static func mayNameContentAvailable(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let count = bytes.count
        var index = 0
        while index < count {
            if index &+ 8 <= count {
                let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                // Neither byte anywhere in these eight: on to the next eight.
                if JSONScanner.matchMask(word, 0x2D) | JSONScanner.matchMask(word, 0x5C) == 0 {
                    index &+= 8
                    continue
                }
            }
            let end = Swift.min(index &+ 8, count)
            while index < end {
                let byte = base.load(fromByteOffset: index, as: UInt8.self)
                if byte == UInt8(ascii: "\\") { return true }
                if byte == UInt8(ascii: "-"), names(bytes, contentAvailableAroundHyphenAt: index) { return true }
                index &+= 1
            }
        }
        return false
    }

    /// Whether `content-available` is spelt in `bytes` with its hyphen at `hyphen`.
    private static func names(_ bytes: UnsafeRawBufferPointer, contentAvailableAroundHyphenAt hyphen: Int) -> Bool {
        let needle: StaticString = "content-available"
        let before = 7  // "content"
        guard hyphen >= before, hyphen - before + needle.utf8CodeUnitCount <= bytes.count else { return false }
        return needle.withUTF8Buffer { word in
            for offset in 0..<word.count where bytes[hyphen - before + offset] != word[offset] { return false }
            return true
        }
    }
}
