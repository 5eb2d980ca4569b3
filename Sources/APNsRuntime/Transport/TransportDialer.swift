import APNsCore

/// Opens the connections of a client shell: the seam between the shell and the network, under
/// the HTTP/2 client's `ProviderConnection` and `HTTP2Exchange` and the feedback reader's
/// `FeedbackConnection`. (The binary client's `GatewayDialer` is the same idea with more to do:
/// session resumption and spare connections.)
///
/// Over TLS in production (``TLSTransportDialer``); tests plug in an in-memory peer behind a
/// ``Transport`` (the HTTP/2 simulator's sans-IO connection, a scripted feedback service) and drive
/// the real shell deterministically. Used by one connection's thread at a time.
package protocol TransportDialer {
    /// Opens a connection within `timeout` seconds, blocking the calling thread until it is up
    /// or failed.
    func connect(timeout: Double) throws(LegacyAPNsError) -> any Transport
}

/// The production dialer: TCP (through the proxy's CONNECT tunnel, when there is one) and TLS,
/// the server's certificate and name verified (``TLSSession/connect(to:context:timeout:resuming:through:)``).
/// With ``applicationProtocol``, a server that chose another protocol by ALPN is refused (one that
/// chose none is taken to speak it all the same, as APNs does for `h2`).
package struct TLSTransportDialer: TransportDialer, Sendable {
    package var endpoint: Endpoint
    package var context: TLSContext
    package var proxy: ProxyTunnel?
    /// The protocol the server must not contradict by ALPN ("h2"), if any.
    package var applicationProtocol: String?

    package init(endpoint: Endpoint, context: TLSContext, proxy: ProxyTunnel? = nil, applicationProtocol: String? = nil)
    {
        self.endpoint = endpoint
        self.context = context
        self.proxy = proxy
        self.applicationProtocol = applicationProtocol
    }

    package func connect(timeout: Double) throws(LegacyAPNsError) -> any Transport {
        try connectSession(timeout: timeout)
    }

    /// The same, as the TLS session itself, offering `ticket` to resume (for a dialer that keeps
    /// the session's ticket for the next connection: the binary client's).
    package func connectSession(timeout: Double, resuming ticket: TLSTicket? = nil) throws(LegacyAPNsError)
        -> TLSSession
    {
        let tls: TLSSession
        do {
            tls = try TLSSession.connect(
                to: endpoint, context: context, timeout: timeout, resuming: ticket, through: proxy)
        } catch let error as LegacyAPNsError {
            throw error
        } catch {
            throw LegacyAPNsError(.connectionFailed, "\(error)", underlying: error)
        }
        if let applicationProtocol {
            let spoken = tls.applicationProtocol
            guard spoken.isEmpty || spoken == applicationProtocol else {
                tls.close()
                throw LegacyAPNsError(
                    .protocolRefused,
                    "\(endpoint) chose \(spoken) by ALPN instead of \(applicationProtocol)"
                        + (applicationProtocol == "h2" ? " (HTTP/2)" : ""))
            }
        }
        return tls
    }
}
