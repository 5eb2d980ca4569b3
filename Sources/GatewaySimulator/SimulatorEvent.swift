import APNsCore
import APNsCredentials
internal import APNsRuntime

/// What the simulator saw, for logs and tests. Delivered from the connection threads.
public enum SimulatorEvent: Hashable, Sendable {
    /// A client completed the TLS handshake. `client` is "address:port", `subject` the client
    /// certificate's subject, `tlsVersion` the protocol ("TLSv1.2"), followed by " resumed" when
    /// the client resumed an earlier session.
    case connected(connection: Int, client: String, subject: String, tlsVersion: String)
    /// A client was refused during the handshake (no certificate, untrusted, ...).
    case handshakeFailed(client: String, reason: String)
    /// A notification was refused with an error response (or, for command 0, by closing).
    case rejected(connection: Int, response: ErrorResponse, token: DeviceToken?, reason: String)
    /// The simulator answered status 10 after `identifier`.
    case shutdown(connection: Int, identifier: UInt32)
    /// The simulator closed a connection without an error response (fault injection).
    case closedSilently(connection: Int, accepted: Int)
    /// A connection sent nothing for the configured idle timeout and was closed.
    case idleTimeout(connection: Int, accepted: Int)
    /// A connection ended; `accepted` notifications were accepted on it.
    case disconnected(connection: Int, accepted: Int)
    /// A feedback client received `count` tuples.
    case feedbackServed(client: String, count: Int)
    /// A connection was refused because the simulator already had its maximum.
    case refused(client: String)
}
