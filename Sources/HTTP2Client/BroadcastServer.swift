import APNsCore

/// Where ``BroadcastClient`` sends broadcast pushes.
///
/// Apple contradicts itself here: its text ("Sending broadcast push notification requests to
/// APNs") puts `POST /4/broadcasts/apps/<bundle id>` on the normal push hosts, and its sandbox
/// sample sends it to `api-broadcast.sandbox.push.apple.com`. The client sends what Apple's
/// samples send where there is a sample (development), and what the text says where there is none
/// (production); a provider that finds the other sandbox host answering names it with
/// ``ServiceHost/custom(_:)`` (`Endpoint(host: "api.sandbox.push.apple.com", port: 443)`). The simulator
/// accepts either authority and logs which it saw.
public typealias BroadcastServer = ServiceHost<BroadcastAPI>

/// Apple's broadcast hosts (see ``BroadcastServer``).
public enum BroadcastAPI: PushService {
    /// `api.push.apple.com:443` (Apple's text; it gives no production sample).
    public static let production = ProviderAPI.production
    /// `api-broadcast.sandbox.push.apple.com:443` (development; the host of Apple's sample).
    public static let sandbox = Endpoint(host: ChannelRequestValidator.sampleBroadcastHost, port: 443)
}
