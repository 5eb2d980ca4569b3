import APNsCore
import APNsCredentials
internal import APNsRuntime

/// Where notifications go: Apple's gateways (retired in 2021) or any other address.
public enum Gateway: Hashable, Sendable {
    /// gateway.push.apple.com:2195
    case production
    /// gateway.sandbox.push.apple.com:2195
    case sandbox
    /// Any gateway, e.g. a local simulator.
    case custom(host: String, port: UInt16)

    /// The port Apple's gateways listened on.
    public static let defaultPort: UInt16 = 2195

    /// Any gateway at `endpoint`, e.g. where a `GatewaySimulator` listens:
    ///
    /// ```swift
    /// let endpoints = try await simulator.start()
    /// let configuration = PushClient.Configuration(gateway: .custom(endpoints.gateway), tls: tls)
    /// ```
    public static func custom(_ endpoint: Endpoint) -> Gateway {
        .custom(host: endpoint.host, port: endpoint.port)
    }

    /// ``custom(_:)``: the gateway at `endpoint`.
    public init(_ endpoint: Endpoint) {
        self = .custom(endpoint)
    }

    /// The address to connect to.
    public var endpoint: Endpoint {
        switch self {
        case .production: Endpoint(host: "gateway.push.apple.com", port: Self.defaultPort)
        case .sandbox: Endpoint(host: "gateway.sandbox.push.apple.com", port: Self.defaultPort)
        case .custom(let host, let port): Endpoint(host: host, port: port)
        }
    }
}
