/// A host ``ChannelClient`` or ``BroadcastClient`` connects to: ``ChannelServer`` or
/// ``BroadcastServer``.
public protocol ExchangeServer: Hashable, Sendable {
    /// The address to connect to.
    var endpoint: Endpoint { get }
}

// Every service's host (``ProviderServer``, ``ChannelServer``, ``BroadcastServer``; a type
// conforms once, whatever its service).
extension ServiceHost: ExchangeServer {}

/// Where and how ``ChannelClient`` (``ChannelServer``) and ``BroadcastClient``
/// (``BroadcastServer``) connect.
public struct ExchangeConfiguration<Server: ExchangeServer>: Sendable {
    /// The host.
    public var server: Server
    /// Certificate or token authentication.
    public var credentials: ProviderCredentials
    /// Which CAs vouch for the server.
    public var trust: TLSConfiguration.Trust = .systemDefault
    /// An HTTP proxy to reach the server through (`CONNECT`), or nil to connect directly.
    public var proxy: ProviderProxy?
    /// Time to connect (through the proxy, when there is one), and to wait for each answer.
    public var timeout: Duration = .seconds(10)
    /// The clocks (for the provider token's age).
    public var clock: any ProviderClock = SystemProviderClock()

    /// Creates a configuration.
    public init(server: Server, credentials: ProviderCredentials) {
        self.server = server
        self.credentials = credentials
    }
}
