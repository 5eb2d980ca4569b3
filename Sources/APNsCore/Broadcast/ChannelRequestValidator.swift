/// The rules of Apple's channel management and broadcast APIs, as a server applies them: a pure
/// function from the received headers, the body and the connection's authorization to the
/// operation or the failure. The channel store's own answers (ChannelNotRegistered for an unknown
/// id, CannotCreateChannelConfig at the 10,000 limit) are the caller's, with ``ChannelLookup``.
///
/// Apple documents the reasons, not an order; this is the order used, the first failing row
/// deciding (management rows M, broadcast rows B, both rows without a letter):
///
/// | # | check | failure |
/// |---|---|---|
/// | 1 | `:path` is `/1/apps/<bundle>/channels`, `/1/apps/<bundle>/all-channels` or `/4/broadcasts/apps/<bundle>` | 404 BadPath |
/// | 2 | the method suits the path (M: POST create, GET read, DELETE delete; GET all-channels; B: POST) | 405 MethodNotAllowed |
/// | 3 | no kept header arrived twice | 400 DuplicateHeaders |
/// | 4 | token auth: the caller's verdict on the bearer token accepts it | its reason (403 ...) |
/// | 5 | `apns-request-id`, if present, is a UUID | 400 BadMessageId |
/// | 6 | the credential covers the bundle id (exact, case included) | 403 TopicMismatch |
/// | 7 | the app has broadcast enabled | 400 FeatureNotEnabled |
/// | 8 | B: the bundle id (and an `apns-topic`, if sent) carries no push-type suffix | 400 TopicDisallowed |
/// | 9 | read, delete, B: `apns-channel-id` present | 400 MissingChannelId |
/// | 10 | ... and base64 | 400 BadChannelId |
/// | 11 | ... and a channel of this app and environment | 400 ChannelNotRegistered |
/// | 12 | M create: the body parses as a JSON object | 400 BadRequestPayload |
/// | 13 | M create: only `message-storage-policy` and `push-type` | 400 BadRequestParams |
/// | 14 | M create: `push-type` present | 400 MissingPushType |
/// | 15 | M create: `push-type` is `LiveActivity` (any case) | 400 InvalidPushType |
/// | 16 | M create: `message-storage-policy` is 0 or 1 | 400 BadRequestParams |
/// | 17 | B: `apns-push-type` present | 400 MissingPushType |
/// | 18 | B: it is `liveactivity` (`Liveactivity` too) | 400 InvalidPushType |
/// | 19 | B: `apns-priority` present and 10, 5 or 1 | 400 BadPriority |
/// | 20 | B: `apns-expiration` present, UNIX seconds, and 0 on a no-message-stored channel | 400 BadExpirationDate |
/// | 21 | B: the body is not empty | 400 PayloadEmpty |
/// | 22 | B: at most 5120 bytes (M: a body of at most 4096) | 413 PayloadTooLarge |
/// | 23 | B: a Live Activity payload that does not start one (``LiveActivityPayload/problem(inPayload:forBroadcast:)``) | 400 InvalidPushType |
///
/// Where Apple contradicts itself, both forms pass and ``Outcome/notes`` says which arrived: the
/// push type's spelling (`Liveactivity`, the text; `liveactivity`, the samples) and the host a
/// broadcast named (`api-broadcast.sandbox.push.apple.com`, the sample; the stated hosts).
/// Decisions where Apple is silent: row 23 answers InvalidPushType (the type does not match the
/// payload); a body on read, delete or list is ignored.
package enum ChannelRequestValidator {
    /// What the request asks for.
    package enum Operation: Hashable, Sendable {
        case create(bundleID: String, policy: MessageStoragePolicy)
        case read(bundleID: String, channel: ChannelID)
        case delete(bundleID: String, channel: ChannelID)
        case list(bundleID: String)
        case broadcast(BroadcastRequest, policy: MessageStoragePolicy)
    }

    /// What validation decided, with the request's `apns-request-id` when it parsed.
    package struct Outcome: Hashable, Sendable {
        /// The operation, or the reason the request is refused.
        package var result: Result<Operation, Refusal>
        /// The request's `apns-request-id`.
        package var requestID: APNsID?
        /// Where Apple contradicts itself, which form the request used ("apns-push-type
        /// 'Liveactivity' (Apple's text)").
        package var notes: [String] = []
    }

    /// A refusal: the reason and what was wrong in words.
    package struct Refusal: Error, Hashable, Sendable {
        package var reason: ProviderReason
        package var why: String

        package init(reason: ProviderReason, why: String) {
            self.reason = reason
            self.why = why
        }
    }

    /// What the caller's channel store knows.
    package struct ChannelLookup: Sendable {
        /// The storage policy of the app's channel `id` in this environment, nil when there is none.
        package var policy: @Sendable (_ bundleID: String, _ id: ChannelID) -> MessageStoragePolicy?
        /// Whether the app has broadcast enabled.
        package var isEnabled: @Sendable (_ bundleID: String) -> Bool

        package init(
            policy: @escaping @Sendable (String, ChannelID) -> MessageStoragePolicy?,
            isEnabled: @escaping @Sendable (String) -> Bool = { _ in true }
        ) {
            self.policy = policy
            self.isEnabled = isEnabled
        }
    }

    /// The largest management body accepted.
    package static let maximumManagementBody = 4096
    /// The hosts Apple's broadcast article and sample name.
    package static let sampleBroadcastHost = "api-broadcast.sandbox.push.apple.com"
    package static let statedBroadcastHosts = ["api.push.apple.com", "api.sandbox.push.apple.com"]

    /// Whether `path` is one of these APIs' (rather than `/3/device/`).
    package static func handles(path: UnsafeRawBufferPointer?) -> Bool {
        guard let path, path.count >= 3, path[0] == UInt8(ascii: "/") else { return false }
        return path[1] == UInt8(ascii: "1") || path[1] == UInt8(ascii: "4")
    }

    private enum Route {
        case channels(String)
        case allChannels(String)
        case broadcasts(String)
    }

    /// Applies the rules above in order.
    package static func validate(
        _ head: ProviderRequestHead, body: [UInt8], authorization: ProviderAuthorization, lookup: ChannelLookup
    ) -> Outcome {
        var outcome = Outcome(result: .failure(Refusal(reason: .badPath, why: "")), requestID: nil)
        outcome.requestID = head.withValue(.requestID) { $0.flatMap(APNsID.init(utf8:)) }
        do throws(Refusal) {
            outcome.result = .success(try operation(head, body, authorization, lookup, &outcome.notes))
        } catch {
            outcome.result = .failure(error)
        }
        return outcome
    }

    private static func refuse(_ reason: ProviderReason, _ why: String) -> Refusal { Refusal(reason: reason, why: why) }

    private static func operation(
        _ head: ProviderRequestHead, _ body: [UInt8], _ authorization: ProviderAuthorization, _ lookup: ChannelLookup,
        _ notes: inout [String]
    ) throws(Refusal) -> Operation {
        // 1-2: path and method.
        let path = head.string(.path) ?? ""
        let route: Route
        if let rest = path.dropPrefix("/1/apps/"), let bundle = rest.dropSuffix("/channels"), !bundle.isEmpty,
            !bundle.contains("/")
        {
            route = .channels(bundle)
        } else if let rest = path.dropPrefix("/1/apps/"), let bundle = rest.dropSuffix("/all-channels"),
            !bundle.isEmpty, !bundle.contains("/")
        {
            route = .allChannels(bundle)
        } else if let bundle = path.dropPrefix(BroadcastRequest.pathPrefix), !bundle.isEmpty, !bundle.contains("/") {
            route = .broadcasts(bundle)
        } else {
            throw refuse(.badPath, "no channel API at '\(path)'")
        }
        let method = head.string(.method) ?? ""
        let bundleID: String
        switch route {
        case .channels(let bundle):
            guard ["POST", "GET", "DELETE"].contains(method) else {
                throw refuse(.methodNotAllowed, "\(method) on /channels (POST, GET or DELETE)")
            }
            bundleID = bundle
        case .allChannels(let bundle):
            guard method == "GET" else { throw refuse(.methodNotAllowed, "\(method) on /all-channels (GET)") }
            bundleID = bundle
        case .broadcasts(let bundle):
            guard method == "POST" else { throw refuse(.methodNotAllowed, "\(method) on a broadcast (POST)") }
            bundleID = bundle
        }

        // 3-7: duplicates, credential, request id, the bundle.
        if let field = head.duplicate { throw refuse(.duplicateHeaders, "\(field) arrived twice") }
        var allowed: [String]?
        switch authorization {
        case .certificate(let topics): allowed = topics
        case .token(.rejected(let reason)): throw refuse(reason, "the provider token was refused")
        case .token(.accepted(let topics)): allowed = topics
        }
        if head.contains(.requestID), head.withValue(.requestID, { $0.flatMap(APNsID.init(utf8:)) }) == nil {
            throw refuse(.badMessageId, "apns-request-id '\(head.string(.requestID) ?? "")' is not a UUID")
        }
        let isBroadcast: Bool
        if case .broadcasts = route { isBroadcast = true } else { isBroadcast = false }
        let suffix = isBroadcast ? BroadcastRequest.topicSuffix(of: bundleID) : nil
        let bareBundle = suffix.map { String(bundleID.dropLast($0.count)) } ?? bundleID
        if let allowed, !allowed.contains(bareBundle) {
            throw refuse(.topicMismatch, "the credential does not cover '\(bareBundle)'")
        }
        guard lookup.isEnabled(bareBundle) else {
            throw refuse(.featureNotEnabled, "broadcast is not enabled for '\(bareBundle)'")
        }
        if let suffix { throw refuse(.topicDisallowed, "a broadcast names the bundle id without '\(suffix)'") }
        if isBroadcast, let topic = head.string(.topic), let suffix = BroadcastRequest.topicSuffix(of: topic) {
            throw refuse(.topicDisallowed, "apns-topic '\(topic)' has the suffix '\(suffix)'")
        }

        // 9-11: the channel id.
        func channel() throws(Refusal) -> (ChannelID, MessageStoragePolicy) {
            guard head.contains(.channelID) else { throw refuse(.missingChannelId, "no apns-channel-id") }
            guard let id = head.withValue(.channelID, { $0.flatMap(ChannelID.init(utf8:)) }) else {
                throw refuse(.badChannelId, "apns-channel-id '\(head.string(.channelID) ?? "")' is not base64")
            }
            guard let policy = lookup.policy(bareBundle, id) else {
                throw refuse(.channelNotRegistered, "no channel \(id) for \(bareBundle) in this environment")
            }
            return (id, policy)
        }

        switch route {
        case .allChannels:
            return .list(bundleID: bundleID)
        case .channels:
            switch method {
            case "GET": return .read(bundleID: bundleID, channel: try channel().0)
            case "DELETE": return .delete(bundleID: bundleID, channel: try channel().0)
            default: return .create(bundleID: bundleID, policy: try createPolicy(body, &notes))
            }
        case .broadcasts:
            let (id, policy) = try channel()
            return .broadcast(try broadcast(head, body, bundleID, id, policy, &notes), policy: policy)
        }
    }

    /// Rows 12-16 and 22 (M).
    private static func createPolicy(_ body: [UInt8], _ notes: inout [String]) throws(Refusal) -> MessageStoragePolicy {
        guard body.count <= maximumManagementBody else {
            throw refuse(.payloadTooLarge, "the body has \(body.count) bytes, at most \(maximumManagementBody)")
        }
        let result = body.withUnsafeBytes { raw in Result { () throws(Refusal) in try createPolicy(raw, &notes) } }
        return try result.get()
    }

    private static func createPolicy(
        _ raw: UnsafeRawBufferPointer, _ notes: inout [String]
    ) throws(Refusal) -> MessageStoragePolicy {
        let members: [JSONScanner.Member]
        do throws(JSONScanner.Failure) {
            members = try JSONScanner.objectMembers(raw)
        } catch {
            throw refuse(.badRequestPayload, "the body is not a JSON object: \(error.message)")
        }
        if let unknown = members.first(where: { !["message-storage-policy", "push-type"].contains($0.key) }) {
            throw refuse(.badRequestParams, "unknown attribute \"\(unknown.key)\"")
        }
        guard let type = members.last(where: { $0.key == "push-type" }) else {
            throw refuse(.missingPushType, "the body has no push-type")
        }
        let name = JSONScanner.stringValue(raw, in: type.value) ?? ""
        guard name.lowercased() == "liveactivity" else {
            throw refuse(.invalidPushType, "push-type '\(name)' is not LiveActivity")
        }
        if name != ChannelRequest.livePushType { notes.append("push-type spelt '\(name)' (Apple writes LiveActivity)") }
        guard let policy = members.last(where: { $0.key == "message-storage-policy" }),
            let value = JSONScanner.unsignedIntegerValue(raw, in: policy.value), value <= 1
        else { throw refuse(.badRequestParams, "message-storage-policy must be 0 or 1") }
        return MessageStoragePolicy(rawValue: Int(value))
    }

    /// Rows 17-23 (B).
    private static func broadcast(
        _ head: ProviderRequestHead, _ body: [UInt8], _ bundleID: String, _ id: ChannelID,
        _ policy: MessageStoragePolicy, _ notes: inout [String]
    ) throws(Refusal) -> BroadcastRequest {
        guard let type = head.string(.pushType) else { throw refuse(.missingPushType, "no apns-push-type") }
        switch type {
        case "liveactivity": notes.append("apns-push-type 'liveactivity' (Apple's samples)")
        case "Liveactivity": notes.append("apns-push-type 'Liveactivity' (Apple's text)")
        default: throw refuse(.invalidPushType, "apns-push-type '\(type)' is not liveactivity")
        }
        if let authority = head.string(.authority) {
            let host = String(authority.split(separator: ":").first ?? "")
            if host == sampleBroadcastHost {
                notes.append("host \(host) (Apple's sample)")
            } else if statedBroadcastHosts.contains(host) {
                notes.append("host \(host) (Apple's stated host)")
            }
        }
        guard let priority = head.withValue(.priority, { $0.flatMap(Priority.init(http2HeaderValue:)) }) else {
            throw refuse(.badPriority, "apns-priority is required: 10, 5 or 1")
        }
        guard let text = head.string(.expiration), !text.isEmpty, text.count <= 10, text.allSatisfy(\.isASCIIDigit),
            let seconds = UInt32(text)
        else { throw refuse(.badExpirationDate, "apns-expiration (UNIX seconds) is required") }
        if policy == .noMessageStored, seconds != 0 {
            throw refuse(.badExpirationDate, "a no-message-stored channel takes apns-expiration 0 only")
        }
        guard !body.isEmpty else { throw refuse(.payloadEmpty, "the body is empty") }
        guard body.count <= PushType.broadcastMaximumPayloadSize else {
            throw refuse(
                .payloadTooLarge,
                "the payload has \(body.count) bytes, at most \(PushType.broadcastMaximumPayloadSize)")
        }
        let payload = Payload(unvalidatedBytes: body)
        if let problem = LiveActivityPayload.problem(inPayload: payload, forBroadcast: true) {
            throw refuse(.invalidPushType, problem)
        }
        return BroadcastRequest(
            bundleID: bundleID, channelID: id, payload: payload, priority: priority,
            expiration: Expiration(rawValue: seconds), pushType: PushType(rawValue: type),
            requestID: head.withValue(.requestID) { $0.flatMap(APNsID.init(utf8:)) })
    }
}

extension String {
    fileprivate func dropPrefix(_ prefix: String) -> String? {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : nil
    }

    fileprivate func dropSuffix(_ suffix: String) -> String? {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : nil
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
