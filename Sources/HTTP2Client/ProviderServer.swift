import APNsCore

/// Where HTTP/2 notifications go: `api.push.apple.com:443`, `api.sandbox.push.apple.com:443`
/// (development), or any server, e.g. `legacy-push serve --http2`.
public typealias ProviderServer = ServiceHost<ProviderAPI>

/// Apple's HTTP/2 provider API: `api.push.apple.com:443` and `api.sandbox.push.apple.com:443`.
public enum ProviderAPI: PushService {
    /// `api.push.apple.com:443`.
    public static let production = Endpoint(host: "api.push.apple.com", port: 443)
    /// `api.sandbox.push.apple.com:443` (development).
    public static let sandbox = Endpoint(host: "api.sandbox.push.apple.com", port: 443)
}
