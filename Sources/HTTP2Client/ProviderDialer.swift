internal import APNsRuntime

/// Opens the connections of the HTTP/2 client's shells (``ProviderConnection``, ``HTTP2Exchange``):
/// the seam between them and the network.
///
/// Over TLS in production (``HTTP2TLSDialer``); the in-memory tests plug in the HTTP/2 simulator's
/// sans-IO connection behind a `Transport` with faults of their own, and drive the real shell
/// deterministically. Used by one connection's thread at a time.
protocol ProviderDialer {
    /// Opens a connection speaking HTTP/2, blocking the calling thread until it is up or failed.
    func connect() throws(LegacyAPNsError) -> any Transport
}

/// The production dialer: TCP (through the proxy's CONNECT tunnel, when there is one), TLS with
/// ALPN `h2`, the server's certificate and name verified; a server that chose another protocol is
/// refused (one that chose none speaks HTTP/2 all the same, as APNs does).
struct HTTP2TLSDialer: ProviderDialer, Sendable {
    var endpoint: Endpoint
    var context: TLSContext
    /// Seconds for the connection and the TLS handshake.
    var timeout: Double
    var proxy: ProxyTunnel?

    func connect() throws(LegacyAPNsError) -> any Transport {
        let tls: TLSSession
        do {
            tls = try TLSSession.connect(to: endpoint, context: context, timeout: timeout, through: proxy)
        } catch let error as LegacyAPNsError {
            throw error
        } catch {
            throw LegacyAPNsError(.connectionFailed, "\(error)", underlying: error)
        }
        let spoken = tls.applicationProtocol
        guard spoken.isEmpty || spoken == "h2" else {
            tls.close()
            throw LegacyAPNsError(.protocolRefused, "\(endpoint) chose \(spoken) by ALPN instead of h2 (HTTP/2)")
        }
        return tls
    }
}
