import APNsCore
import APNsCredentials

/// What ``ProviderSimulator`` saw, for logs and tests. Delivered from the connection threads;
/// per-request events (``rejected(connection:stream:response:token:why:)``) only cost anything when
/// an event handler is configured.
public enum ProviderSimulatorEvent: Hashable, Sendable {
    /// How a connection authenticates, decided by the TLS handshake.
    public enum Authentication: Hashable, Sendable {
        /// The client presented a certificate chaining to the trusted CAs: its subject, the
        /// topics it may push to, and the environment its markers say.
        case certificate(subject: String, topics: [String], environment: CertificateEnvironment)
        /// No client certificate: every request needs a provider token.
        case token
    }

    /// A client completed the TLS handshake. `client` is "address:port", `tlsVersion` the
    /// protocol ("TLSv1.3"), `applicationProtocol` what ALPN chose ("h2", or "" when the client
    /// offered no ALPN: it is served HTTP/2 all the same).
    case connected(
        connection: Int, client: String, tlsVersion: String, applicationProtocol: String,
        authentication: Authentication)
    /// A client was refused during the TLS handshake (untrusted certificate, ALPN without h2, ...).
    case handshakeFailed(client: String, reason: String)
    /// A connection was refused because the simulator already serves its maximum.
    case refused(client: String)
    /// The first valid provider token of a token connection: its key and team now own the
    /// connection, and the stream limit rose from 1.
    case tokenAccepted(connection: Int, keyID: String, teamID: String)
    /// A token connection's token was replaced by a newer valid one.
    case tokenUpdated(connection: Int, keyID: String)
    /// A request was answered with an error status. `why` says what the simulator found when the
    /// status alone does not (a certificate for the other environment, which check refused a
    /// provider token); nil otherwise.
    case rejected(connection: Int, stream: Int32, response: ProviderResponse, token: DeviceToken?, why: String?)
    /// A channel management or broadcast request was answered: `request` is its method and path
    /// ("POST /1/apps/com.example.app/channels"), `why` what was wrong when it was refused (for an
    /// accepted broadcast: its channel and storage policy), and
    /// `notes` which form it used where Apple contradicts itself ("apns-push-type 'Liveactivity'
    /// (Apple's text)").
    case channelRequest(connection: Int, request: String, response: ChannelResponse, why: String?, notes: [String])
    /// A request will never be answered (fault injection).
    case stalled(connection: Int, stream: Int32)
    /// The simulator sent GOAWAY: streams above `lastStreamID` are not processed.
    case goaway(connection: Int, lastStreamID: Int32, reason: ProviderReason?)
    /// The simulator reset the connection (fault injection): requests in flight were not answered.
    case reset(connection: Int, unanswered: Int)
    /// The client broke HTTP/2; nghttp2 said GOAWAY and the connection closed.
    case protocolError(connection: Int, reason: String)
    /// The simulator cut a client off for exceeding a ``ProviderSimulator/Limits`` bound (a
    /// trickled request, responses never read, no HTTP/2 preface in time).
    case cutOff(connection: Int, reason: String)
    /// A connection ended; `accepted` and `rejected` requests were answered on it.
    case disconnected(connection: Int, accepted: Int, rejected: Int)
}
