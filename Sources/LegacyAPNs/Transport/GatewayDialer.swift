import APNsCore
import APNsCredentials
package import APNsRuntime

/// Opens the connections of one slot: the seam under ``GatewayConnection``.
///
/// Over TLS in production (``TLSDialer``: session resumption and spare connections live there);
/// tests plug in an in-memory gateway and drive the real connection shell deterministically.
/// Used by the slot's thread only.
package protocol GatewayDialer: AnyObject {
    /// Opens a connection, blocking the slot's thread until it is up or failed.
    func connect() throws(LegacyAPNsError) -> any Transport
    /// The current connection is in use: a chance to prepare the next one (called between writes).
    func connectionInUse(_ transport: any Transport)
    /// The current connection is finished with (it is closed right after).
    func retire(_ transport: any Transport)
    /// Error responses made the slot reconnect: from now on keep the next connection ready.
    func expectReconnects()
    /// The slot is done: release whatever is kept ready.
    func stop()
}

/// The production dialer: TLS to the gateway, resuming the latest session (a reconnect after an
/// error response then costs no certificate signatures) and, once errors have made the slot
/// reconnect, taking a spare connection prepared meanwhile by a ``SpareConnector``.
package final class TLSDialer: GatewayDialer {
    /// Whether the slot keeps spares, and whether the current connection has ordered one.
    private enum Spares {
        /// An error-free send opens no extra connection.
        case unused
        /// Spares are in use; the current connection orders one once its session is resumable.
        case wanted
        /// The current connection has ordered its spare.
        case ordered
    }

    private let endpoint: Endpoint
    private let context: TLSContext
    private let timeout: Double
    private let spare: SpareConnector
    private var spares = Spares.unused
    /// The newest resumable session of a retired connection.
    private var ticket: TLSTicket?

    package init(endpoint: Endpoint, context: TLSContext, timeout: Double) {
        self.endpoint = endpoint
        self.context = context
        self.timeout = timeout
        self.spare = SpareConnector(endpoint: endpoint, context: context, timeout: timeout)
    }

    package func connect() throws(LegacyAPNsError) -> any Transport {
        let session: TLSSession
        if let ready = spare.take() {
            session = ready
        } else {
            session = try TLSTransportDialer(endpoint: endpoint, context: context)
                .connectSession(timeout: timeout, resuming: ticket)
        }
        ticket = nil
        if case .ordered = spares { spares = .wanted }
        return session
    }

    package func connectionInUse(_ transport: any Transport) {
        // With TLS 1.3 the ticket arrives after the handshake, so check until it is there.
        guard case .wanted = spares, let session = transport as? TLSSession, let ticket = session.resumableTicket
        else { return }
        spares = .ordered
        spare.prepare(resuming: ticket)
    }

    package func retire(_ transport: any Transport) {
        if let session = transport as? TLSSession, let ticket = session.resumableTicket { self.ticket = ticket }
    }

    package func expectReconnects() {
        if case .unused = spares { spares = .wanted }
    }

    package func stop() {
        spare.stop()
    }
}
