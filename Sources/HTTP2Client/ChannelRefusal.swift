/// Why APNs (or the client, before sending) refused a channel management or broadcast request:
/// a value, as a push's rejection is; failures to reach the server are thrown instead.
public struct ChannelRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    /// The answer: status, reason, `apns-request-id`.
    public var response: ChannelResponse
    /// What the client found, when it refused the request before sending it (nil: APNs answered).
    public var localExplanation: String?

    /// Creates a refusal.
    public init(response: ChannelResponse, localExplanation: String? = nil) {
        self.response = response
        self.localExplanation = localExplanation
    }

    /// Whether the client refused the request itself, without sending it.
    public var isLocal: Bool { localExplanation != nil }

    /// "400 BadChannelId", or the client's explanation.
    public var description: String {
        let answer = response.description
        return localExplanation.map { "\(answer): \($0) (refused before sending)" } ?? answer
    }
}
