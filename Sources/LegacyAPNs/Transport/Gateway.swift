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

    /// The address to connect to.
    public var endpoint: Endpoint {
        switch self {
        case .production: Endpoint(host: "gateway.push.apple.com", port: 2195)
        case .sandbox: Endpoint(host: "gateway.sandbox.push.apple.com", port: 2195)
        case .custom(let host, let port): Endpoint(host: host, port: port)
        }
    }
}
