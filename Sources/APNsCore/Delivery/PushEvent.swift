/// Something that happened during a send, delivered to the event sink as it happens.
///
/// `connection` numbers the parallel connection slots from 0. The library never prints; the CLI
/// turns these into progress lines and `--json` events.
public enum PushEvent: Hashable, Sendable {
    /// A TLS connection to the gateway is up (`attempt` counts connections on this slot from 1).
    case connected(connection: Int, attempt: Int)
    /// The gateway refused a notification.
    case rejected(connection: Int, Rejection)
    /// Notifications go out again on the next connection.
    case resent(connection: Int, count: Int, reason: ResendReason)
    /// A notification could not be confirmed and will not be retried.
    case unconfirmed(connection: Int, UnconfirmedNotification)
    /// The gateway confirmed `count` notifications at once (they had been written before an error
    /// response or the confirmation barrier).
    case confirmed(connection: Int, count: Int)
    /// An error response named an identifier this client never wrote on that connection.
    case unknownIdentifier(connection: Int, ErrorResponse)
    /// The next connection attempt waits `delay`.
    case reconnecting(connection: Int, delay: Duration, reason: String)
    /// A connection ended.
    case closed(connection: Int, reason: String)
}

/// Why notifications were resent.
public enum ResendReason: Hashable, Sendable {
    /// The gateway rejected an earlier notification and discarded everything after it (with
    /// status 1, processing error, the named notification is resent too).
    case errorResponse(ErrorResponse)
    /// The gateway said it was shutting down (status 10) after the named notification.
    case shutdown(identifier: UInt32)
    /// The connection closed without an error response: the gateway may or may not have processed
    /// these, so they are resent at least once and counted as possible duplicates.
    case silentClose
}
