/// Where a connection goes: one of Apple's two hosts of a service (production, or the sandbox for
/// development), or any other address, such as a local simulator. One type for every service, so
/// that each is spelt the same way: `Gateway.production`, `FeedbackService.sandbox`,
/// `ProviderServer.custom(host: "127.0.0.1", port: 2197)` or `.custom(endpoint)`.
///
/// The service (``PushService``) names Apple's two addresses; `Gateway` (LegacyAPNs),
/// `FeedbackService` (FeedbackClient), `ProviderServer`, `ChannelServer` and `BroadcastServer`
/// (HTTP2Client) are its instances.
public enum ServiceHost<Service: PushService>: Hashable, Sendable {
    /// Apple's production host.
    case production
    /// Apple's sandbox (development) host.
    case sandbox
    /// Any other address, e.g. a local simulator.
    case custom(host: String, port: UInt16)

    /// Any server at `endpoint`, e.g. where a simulator listens.
    public static func custom(_ endpoint: Endpoint) -> Self {
        .custom(host: endpoint.host, port: endpoint.port)
    }

    /// ``custom(_:)``: the server at `endpoint`.
    public init(_ endpoint: Endpoint) {
        self = .custom(endpoint)
    }

    /// The address to connect to.
    public var endpoint: Endpoint {
        switch self {
        case .production: Service.production
        case .sandbox: Service.sandbox
        case .custom(let host, let port): Endpoint(host: host, port: port)
        }
    }
}

/// A service of Apple's push, by its two addresses (the type parameter of ``ServiceHost``).
public protocol PushService: Sendable {
    /// The production host and port.
    static var production: Endpoint { get }
    /// The sandbox (development) host and port.
    static var sandbox: Endpoint { get }
}
