internal import APNsRuntime

extension TLSSession {
    /// Connects to `endpoint` (through `proxy`'s CONNECT tunnel, when given) with ALPN `h2` and
    /// refuses a server that chose another protocol (one that chose none speaks HTTP/2 all the
    /// same, as APNs does): every HTTP/2 client here dials so.
    static func connectSpeakingHTTP2(
        to endpoint: Endpoint, context: TLSContext, timeout: Double, through proxy: ProxyTunnel? = nil
    ) throws -> TLSSession {
        let tls = try TLSSession.connect(to: endpoint, context: context, timeout: timeout, through: proxy)
        let spoken = tls.applicationProtocol
        guard spoken.isEmpty || spoken == "h2" else {
            tls.close()
            throw LegacyAPNsError(.protocolRefused, "\(endpoint) chose \(spoken) by ALPN instead of h2 (HTTP/2)")
        }
        return tls
    }
}
