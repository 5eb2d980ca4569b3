import APNsCore
import APNsCredentials
internal import APNsRuntime

/// Where the feedback service is: Apple's hosts (retired in 2021 with the binary gateway) or any
/// other address. The counterpart of `Gateway` (LegacyAPNs) for port 2196.
public enum FeedbackService: Hashable, Sendable {
    /// feedback.push.apple.com:2196
    case production
    /// feedback.sandbox.push.apple.com:2196
    case sandbox
    /// Any feedback service, e.g. a local simulator.
    case custom(host: String, port: UInt16)

    /// The port Apple's feedback service listened on.
    public static let defaultPort: UInt16 = 2196

    /// Any feedback service at `endpoint`, e.g. `GatewaySimulator`'s feedback port.
    public static func custom(_ endpoint: Endpoint) -> FeedbackService {
        .custom(host: endpoint.host, port: endpoint.port)
    }

    /// ``custom(_:)``: the feedback service at `endpoint`.
    public init(_ endpoint: Endpoint) {
        self = .custom(endpoint)
    }

    /// The address to connect to.
    public var endpoint: Endpoint {
        switch self {
        case .production: Endpoint(host: "feedback.push.apple.com", port: Self.defaultPort)
        case .sandbox: Endpoint(host: "feedback.sandbox.push.apple.com", port: Self.defaultPort)
        case .custom(let host, let port): Endpoint(host: host, port: port)
        }
    }
}
