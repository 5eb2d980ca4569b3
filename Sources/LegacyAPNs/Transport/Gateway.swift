import APNsCore

/// Where notifications go: Apple's binary gateways (retired in 2021) or any other address, e.g.
/// where a `GatewaySimulator` listens:
///
/// ```swift
/// let endpoints = try await simulator.start()
/// let configuration = PushClient.Configuration(gateway: .custom(endpoints.gateway), tls: tls)
/// ```
public typealias Gateway = ServiceHost<BinaryGateway>

/// Apple's binary gateways: `gateway.push.apple.com:2195` and `gateway.sandbox.push.apple.com:2195`.
public enum BinaryGateway: PushService {
    /// The port Apple's gateways listened on.
    public static let defaultPort: UInt16 = 2195
    /// `gateway.push.apple.com:2195`.
    public static let production = Endpoint(host: "gateway.push.apple.com", port: defaultPort)
    /// `gateway.sandbox.push.apple.com:2195`.
    public static let sandbox = Endpoint(host: "gateway.sandbox.push.apple.com", port: defaultPort)
}
