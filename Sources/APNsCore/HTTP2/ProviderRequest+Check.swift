extension ProviderRequest {
    /// What APNs would refuse, found without a round trip: the reason it would answer and the
    /// fix in words, or nil when the request is fine as far as the client can tell.
    ///
    /// Checked, in this order: an empty payload (PayloadEmpty), a payload over the push type's
    /// limit (PayloadTooLarge: 4096 bytes, 5120 for `voip`), a priority other than 10, 5 and 1
    /// (BadPriority), a `background` push at priority 10 (BadPriority: "Always use priority 5"), a
    /// topic without the suffix the push type requires (BadTopic), a collapse id over 64 bytes
    /// (BadCollapseId), and, with token auth, a missing topic (MissingTopic). The device token's
    /// size is checked when the request is made.
    public func problem(usesTokens: Bool) -> (reason: ProviderReason, explanation: String)? {
        let type = pushType ?? .alert
        if payload.count == 0 { return (.payloadEmpty, "the payload is empty") }
        if payload.count > type.maximumPayloadSize {
            return (
                .payloadTooLarge,
                "the payload has \(payload.count) bytes; APNs takes at most \(type.maximumPayloadSize) for \(type) pushes"
            )
        }
        if let priority, ![10, 5, 1].contains(priority.rawValue) {
            return (.badPriority, "priority \(priority.rawValue) is not 10, 5 or 1")
        }
        if type == .background, priority?.rawValue == 10 {
            return (.badPriority, "background pushes must use priority 5, never 10")
        }
        if let suffix = type.requiredTopicSuffix, let topic, !topic.hasSuffix(suffix) {
            return (.badTopic, "\(type) pushes need a topic ending in \(suffix), got '\(topic)'")
        }
        if let collapseID, collapseID.utf8.count > 64 {
            return (.badCollapseId, "the collapse id has \(collapseID.utf8.count) bytes, at most 64 are allowed")
        }
        if usesTokens, topic == nil {
            return (.missingTopic, "token authentication needs a topic (the app's bundle id)")
        }
        return nil
    }
}

extension PushType {
    /// The push type a payload implies when none is given: `background` when its `aps` holds
    /// only `content-available`, `alert` otherwise (what `send --http2` and the bridge assume).
    public static func inferred(for payload: Payload) -> PushType {
        payload.bytes.withUnsafeBytes { bytes -> PushType in
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
    }

    /// Whether `bytes` contain `content-available` or a backslash (an escape could spell it).
    private static func mayNameContentAvailable(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let needle: StaticString = "content-available"
        let length = needle.utf8CodeUnitCount
        guard bytes.count >= length else { return bytes.contains(UInt8(ascii: "\\")) }
        return needle.withUTF8Buffer { word in
            for index in 0..<bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\\") { return true }
                if byte == word[0], index + length <= bytes.count,
                    memcmpEqual(bytes, from: index, word)
                {
                    return true
                }
            }
            return false
        }
    }

    private static func memcmpEqual(
        _ bytes: UnsafeRawBufferPointer, from start: Int, _ word: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        for offset in 0..<word.count where bytes[start + offset] != word[offset] { return false }
        return true
    }
}
