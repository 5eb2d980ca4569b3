import APNsCore
import APNsCredentials
internal import APNsRuntime

/// What the simulator saw, for logs and tests. Delivered from the simulator's threads (its event
/// loops and accept threads).
public enum SimulatorEvent: Hashable, Sendable {
    /// A client completed the TLS handshake. `client` is "address:port", `subject` the client
    /// certificate's subject, `tlsVersion` the protocol ("TLSv1.2"), followed by " resumed" when
    /// the client resumed an earlier session.
    case connected(connection: Int, client: String, subject: String, tlsVersion: String)
    /// A client was refused during the handshake (no certificate, untrusted, ...).
    case handshakeFailed(client: String, reason: String)
    /// A notification was refused with an error response (or, for command 0, by closing).
    case rejected(connection: Int, response: ErrorResponse, token: DeviceToken?, reason: String)
    /// A sender's ``ConfirmationBarrier`` (an enhanced frame with neither token nor payload,
    /// which senders such as `PushClient` write to learn that everything before it was accepted)
    /// was answered with status 2 naming it, as Apple's gateway answered it, after `accepted`
    /// notifications on the connection: not a rejection, and not counted as one.
    case confirmationAnswered(connection: Int, identifier: UInt32, accepted: Int)
    /// The simulator answered status 10 after `identifier`.
    case shutdown(connection: Int, identifier: UInt32)
    /// The simulator closed a connection without an error response (fault injection).
    case closedSilently(connection: Int, accepted: Int)
    /// A connection sent nothing for the configured idle timeout and was closed.
    case idleTimeout(connection: Int, accepted: Int)
    /// A frame begun on the connection was not complete within the configured frame timeout (a
    /// client trickling bytes): the connection was closed without a response.
    case progressTimeout(connection: Int, accepted: Int)
    /// An idle connection was closed to make room for a new client at the connection limit.
    case evicted(connection: Int, accepted: Int)
    /// The client certificate is not for this gateway (its environment, or none of its topics is
    /// allowed), so the connection was closed right after the handshake, as Apple's gateway did.
    case certificateRefused(connection: Int, client: String, reason: String)
    /// A connection ended; `accepted` notifications were accepted on it.
    case disconnected(connection: Int, accepted: Int)
    /// A feedback client received `count` tuples.
    case feedbackServed(client: String, count: Int)
    /// A connection was refused because the simulator already had its maximum of active senders
    /// (no connection was idle long enough to make room).
    case refused(client: String)
}
