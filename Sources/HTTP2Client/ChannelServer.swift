/// Where channel management requests go: Apple's separate management hosts, which reuse the
/// binary protocol's old port numbers.
public enum ChannelServer: Hashable, Sendable {
    /// `api-manage-broadcast.push.apple.com:2196`.
    case production
    /// `api-manage-broadcast.sandbox.push.apple.com:2195` (development).
    case sandbox
    /// Any server, e.g. `legacy-push serve --http2` (its port, or its `--management-port`).
    case custom(Endpoint)

    /// The address to connect to.
    public var endpoint: Endpoint {
        switch self {
        case .production: Endpoint(host: "api-manage-broadcast.push.apple.com", port: 2196)
        case .sandbox: Endpoint(host: "api-manage-broadcast.sandbox.push.apple.com", port: 2195)
        case .custom(let endpoint): endpoint
        }
    }
}
