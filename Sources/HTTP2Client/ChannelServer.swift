import APNsCore

/// Where channel management requests go: Apple's separate management hosts, which reuse the
/// binary protocol's old port numbers, or any server, e.g. `legacy-push serve --http2` (its port,
/// or its `--management-port`).
public typealias ChannelServer = ServiceHost<ChannelManagement>

/// Apple's channel management hosts: `api-manage-broadcast.push.apple.com:2196` and
/// `api-manage-broadcast.sandbox.push.apple.com:2195` (development).
public enum ChannelManagement: PushService {
    /// `api-manage-broadcast.push.apple.com:2196`.
    public static let production = Endpoint(host: "api-manage-broadcast.push.apple.com", port: 2196)
    /// `api-manage-broadcast.sandbox.push.apple.com:2195` (development).
    public static let sandbox = Endpoint(host: "api-manage-broadcast.sandbox.push.apple.com", port: 2195)
}
