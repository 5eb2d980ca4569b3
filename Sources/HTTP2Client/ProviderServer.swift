/// Where HTTP/2 notifications go.
public enum ProviderServer: Hashable, Sendable {
    /// `api.push.apple.com:443`.
    case production
    /// `api.sandbox.push.apple.com:443` (development).
    case sandbox
    /// Any server, e.g. `legacy-push serve --http2`.
    case custom(Endpoint)

    /// The address to connect to.
    public var endpoint: Endpoint {
        switch self {
        case .production: Endpoint(host: "api.push.apple.com", port: 443)
        case .sandbox: Endpoint(host: "api.sandbox.push.apple.com", port: 443)
        case .custom(let endpoint): endpoint
        }
    }
}
