import APNsCore

/// Callbacks for what a push client, simulator or bridge does, one a kind of event, for an
/// application that exports metrics its own way (as Pushy's `ApnsClientMetricsListener`). Every
/// callback has an empty default: implement the ones you need. ``PushMetrics`` (Prometheus) is one
/// implementation.
///
/// Callbacks come from the library's connection threads, often once per notification: keep them
/// quick (an atomic increment), never block. They carry no device token or identifier.
///
/// The modules feed a listener from the events they report anyway, so nothing is added to their
/// hot paths:
/// - HTTP2Client: `ProviderClient(configuration:events:)` with `events: listener.record`
///   (``record(_:)-(ProviderEvent)``);
/// - LegacyAPNs: `PushClient(configuration:events:)` with `events: listener.record`
///   (``record(_:)-(PushEvent)``);
/// - LegacyBridge and GatewaySimulator: `configuration.reportMetrics(to: listener)`, which keeps the
///   event handler already configured.
public protocol PushMetricsListener: Sendable {
    // MARK: Connections to a server of ours (bridge senders, simulator clients)

    /// A client connected (its TLS handshake succeeded).
    func connectionAccepted()
    /// A client was refused: its handshake failed, its certificate was not acceptable, or the
    /// server was full.
    func connectionRefused()
    /// The binary server answered a notification with this error response and closed (nil: closed
    /// without an answer, as for command 0).
    func errorResponseSent(status: StatusCode?)

    // MARK: HTTP/2 requests to APNs (HTTP2Client, the bridge's upstream)

    /// A connection to the provider API is up.
    func upstreamConnected()
    /// A connection attempt failed, or an open connection was lost (it is retried, or the send stops).
    func upstreamConnectionFailed()
    /// A connection ended.
    func upstreamConnectionClosed()
    /// A request went out on a stream (a retry too).
    func upstreamRequestSent()
    /// APNs answered a request for good (200, or an error status with APNs's reason; an answer that
    /// leads to a retry is ``upstreamRetried(cause:possibleDuplicate:)``), `latency` after it was
    /// sent. `pushType` is the request's `apns-push-type` when it named one.
    func upstreamAnswered(status: Int, reason: ProviderReason?, pushType: PushType?, latency: Duration?)
    /// The client refused a request without sending it (what APNs would answer `reason` for).
    func upstreamRefusedLocally(reason: ProviderReason?)
    /// A request goes out again, for `cause` (429, 5xx, a refused or lost stream, a GOAWAY, ...);
    /// `possibleDuplicate` when an earlier attempt may have been delivered.
    func upstreamRetried(cause: ProviderRetryCause, possibleDuplicate: Bool)
    /// A stream ended by RST_STREAM (or closed without an answer): sent by the client (`byClient`:
    /// a request unanswered for the request timeout) or by the server, with its error code.
    func upstreamStreamReset(errorCode: HTTP2ErrorCode, byClient: Bool)
    /// A notification ended without a verdict; `mayHaveBeenDelivered` when it may have arrived.
    func upstreamUnconfirmed(mayHaveBeenDelivered: Bool)
    /// The server said GOAWAY (with APNs's reason, when it gave one).
    func upstreamGoaway(reason: ProviderReason?)
    /// A fresh provider token was signed (token authentication).
    func upstreamTokenRefreshed()
    /// A connection's stream limit changed (the server's SETTINGS, or the first answer of a token
    /// connection).
    func upstreamStreamLimit(_ limit: Int)

    // MARK: The binary gateway (LegacyAPNs's PushClient)

    /// A connection to the binary gateway is up.
    func gatewayConnected()
    /// The gateway refused a notification with this status.
    func gatewayRejected(status: StatusCode)
    /// `count` notifications go out again on the next connection.
    func gatewayResent(count: Int)
    /// A notification ended without confirmation.
    func gatewayUnconfirmed()

    // MARK: Servers (the HTTP/2 simulator, the bridge)

    /// The HTTP/2 simulator said GOAWAY (with the reason it gave).
    func goawaySent(reason: ProviderReason?)
    /// The HTTP/2 simulator reset a connection with requests in flight (fault injection).
    func connectionReset()
    /// The bridge's durable store failed.
    func storeFailed()
    /// The bridge's upstream became unavailable (new senders are refused until it answers).
    func upstreamOutage()
}

extension PushMetricsListener {
    /// Does nothing unless implemented.
    public func connectionAccepted() {}
    /// Does nothing unless implemented.
    public func connectionRefused() {}
    /// Does nothing unless implemented.
    public func errorResponseSent(status: StatusCode?) {}
    /// Does nothing unless implemented.
    public func upstreamConnected() {}
    /// Does nothing unless implemented.
    public func upstreamConnectionFailed() {}
    /// Does nothing unless implemented.
    public func upstreamConnectionClosed() {}
    /// Does nothing unless implemented.
    public func upstreamRequestSent() {}
    /// Does nothing unless implemented.
    public func upstreamAnswered(status: Int, reason: ProviderReason?, pushType: PushType?, latency: Duration?) {}
    /// Does nothing unless implemented.
    public func upstreamRefusedLocally(reason: ProviderReason?) {}
    /// Does nothing unless implemented.
    public func upstreamRetried(cause: ProviderRetryCause, possibleDuplicate: Bool) {}
    /// Does nothing unless implemented.
    public func upstreamStreamReset(errorCode: HTTP2ErrorCode, byClient: Bool) {}
    /// Does nothing unless implemented.
    public func upstreamUnconfirmed(mayHaveBeenDelivered: Bool) {}
    /// Does nothing unless implemented.
    public func upstreamGoaway(reason: ProviderReason?) {}
    /// Does nothing unless implemented.
    public func upstreamTokenRefreshed() {}
    /// Does nothing unless implemented.
    public func upstreamStreamLimit(_ limit: Int) {}
    /// Does nothing unless implemented.
    public func gatewayConnected() {}
    /// Does nothing unless implemented.
    public func gatewayRejected(status: StatusCode) {}
    /// Does nothing unless implemented.
    public func gatewayResent(count: Int) {}
    /// Does nothing unless implemented.
    public func gatewayUnconfirmed() {}
    /// Does nothing unless implemented.
    public func goawaySent(reason: ProviderReason?) {}
    /// Does nothing unless implemented.
    public func connectionReset() {}
    /// Does nothing unless implemented.
    public func storeFailed() {}
    /// Does nothing unless implemented.
    public func upstreamOutage() {}

    /// Hands an HTTP/2 client's event to the callback it concerns.
    public func record(_ event: ProviderEvent) {
        switch event {
        case .connected: upstreamConnected()
        case .connectionFailed: upstreamConnectionFailed()
        case .connectionClosed: upstreamConnectionClosed()
        case .sent: upstreamRequestSent()
        case .accepted(_, let acceptance):
            upstreamAnswered(status: 200, reason: nil, pushType: acceptance.pushType, latency: acceptance.latency)
        case .rejected(_, let rejection):
            if rejection.isLocal {
                upstreamRefusedLocally(reason: rejection.reason)
            } else {
                upstreamAnswered(
                    status: rejection.status, reason: rejection.reason, pushType: rejection.pushType,
                    latency: rejection.latency)
            }
        case .retrying(_, _, let cause, _, let possibleDuplicate):
            upstreamRetried(cause: cause, possibleDuplicate: possibleDuplicate)
        case .streamReset(_, _, let errorCode, let byClient):
            upstreamStreamReset(errorCode: errorCode, byClient: byClient)
        case .unconfirmed(_, let unconfirmed):
            upstreamUnconfirmed(mayHaveBeenDelivered: unconfirmed.mayHaveBeenDelivered)
        case .goaway(_, let goaway): upstreamGoaway(reason: goaway.reason)
        case .tokenRefreshed: upstreamTokenRefreshed()
        case .streamLimit(_, let limit): upstreamStreamLimit(limit)
        }
    }

    /// Hands a binary client's event to the callback it concerns.
    public func record(_ event: PushEvent) {
        switch event {
        case .connected: gatewayConnected()
        case .rejected(_, let rejection): gatewayRejected(status: rejection.status)
        case .resent(_, let count, _): gatewayResent(count: count)
        case .unconfirmed: gatewayUnconfirmed()
        case .confirmed, .unknownIdentifier, .reconnecting, .closed: break
        }
    }
}
