import APNsCore

/// Where the feedback service is: Apple's hosts (retired in 2021 with the binary gateway) or any
/// other address, e.g. `GatewaySimulator`'s feedback port. The counterpart of `Gateway`
/// (LegacyAPNs) for port 2196.
public typealias FeedbackService = ServiceHost<BinaryFeedback>

/// Apple's feedback service: `feedback.push.apple.com:2196` and `feedback.sandbox.push.apple.com:2196`.
public enum BinaryFeedback: PushService {
    /// The port Apple's feedback service listened on.
    public static let defaultPort: UInt16 = 2196
    /// `feedback.push.apple.com:2196`.
    public static let production = Endpoint(host: "feedback.push.apple.com", port: defaultPort)
    /// `feedback.sandbox.push.apple.com:2196`.
    public static let sandbox = Endpoint(host: "feedback.sandbox.push.apple.com", port: defaultPort)
}
