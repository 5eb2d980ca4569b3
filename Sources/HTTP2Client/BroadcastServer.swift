import APNsCore

/// Where ``BroadcastClient`` sends broadcast pushes.
///
/// Apple contradicts itself here: its text ("Sending broadcast push notification requests to
/// APNs") puts `POST /4/broadcasts/apps/<bundle id>` on the normal push hosts, and its sandbox
/// sample sends it to `api-broadcast.sandbox.push.apple.com`. The client sends what Apple's
/// samples send where there is a sample (development), and what the text says where there is none
/// (production); a provider that finds the other sandbox host answering names it with
/// ``custom(_:)`` (`Endpoint(host: "api.sandbox.push.apple.com", port: 443)`). The simulator
/// accepts either authority and logs which it saw.
public enum BroadcastServer: Hashable, Sendable, ExchangeServer {
    /// `api.push.apple.com:443` (Apple's text; it gives no production sample).
    case production
    /// `api-broadcast.sandbox.push.apple.com:443` (development; the host of Apple's sample).
    case sandbox
    /// Any server, e.g. `legacy-push serve --http2`.
    case custom(Endpoint)

    /// The address to connect to.
    public var endpoint: Endpoint {
        switch self {
        case .production: ProviderServer.production.endpoint
        case .sandbox: Endpoint(host: ChannelRequestValidator.sampleBroadcastHost, port: 443)
        case .custom(let endpoint): endpoint
        }
    }
}
