/// Sends broadcast pushes (iOS 18): one Live Activity update to every device subscribed to a
/// channel, `POST /4/broadcasts/apps/<bundle id>` on the push host (``BroadcastServer``).
///
/// ```swift
/// let broadcasts = try BroadcastClient(
///     configuration: .init(server: .sandbox, credentials: .token(key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")))
/// let update = try LiveActivityPayload(event: .update, timestamp: now, contentState: score)
/// let request = BroadcastRequest(bundleID: "com.example.app", channelID: id, payload: try update.build(forBroadcast: true))
/// switch try await broadcasts.send(request) {
/// case .success(let answer): print("sent, apns-request-id", answer.requestID!)
/// case .failure(let refusal): print("refused:", refusal)
/// }
/// ```
///
/// Each request is checked first as APNs would (``BroadcastRequest/problem()``: no topic suffix,
/// 5120 bytes, priority, no `start`); a request that fails is a local ``ChannelRefusal`` and is
/// not sent. The headers are what Apple's samples send (`apns-push-type: liveactivity`). A
/// success carries `apns-request-id`, and `apns-unique-id` in development.
public final class BroadcastClient: Sendable {
    /// Where and how to connect.
    public typealias Configuration = ExchangeConfiguration<BroadcastServer>

    /// The configuration the client was made with.
    public let configuration: Configuration
    private let line: ExchangeLine

    /// Creates a client; nothing connects until the first broadcast.
    ///
    /// - Throws: ``LegacyAPNsError`` when the TLS context cannot be built.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        line = try ExchangeLine(configuration)
    }

    /// Sends one broadcast: APNs's answer (200), or the refusal (APNs's, or the client's own).
    public func send(_ request: BroadcastRequest) async throws -> Result<ChannelResponse, ChannelRefusal> {
        if let (reason, explanation) = request.problem() {
            return .failure(
                ChannelRefusal(response: ChannelResponse(rejecting: reason), localExplanation: explanation))
        }
        let response = try await line.perform(
            { headers, authority, token in
                request.writeHeaders(into: &headers, authority: authority, authorizationToken: token)
            }, body: request.payload.bytes)
        return response.status == 200 ? .success(response) : .failure(ChannelRefusal(response: response))
    }

    /// Closes the connection kept open.
    public func close() async { await line.close() }
}
