import APNsCore
import APNsCredentials
internal import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// One TLS connection over a non-blocking socket, used by exactly one thread at a time.
///
/// Reads and writes never block: they return ``IOResult/wantRead`` or ``IOResult/wantWrite``
/// and the owner polls the socket. Failures come back as ``LegacyAPNsError`` values worded for
/// people: an untrusted server, a refused client certificate, a reset.
package final class TLSSession: Transport {
    package let socket: Socket
    let ssl: OpaquePointer
    private let context: TLSContext
    /// "host:port", for messages.
    package let peer: String
    /// Server: what a client offered by ALPN when none of it was acceptable (set by the context's
    /// select callback during the handshake), for the error message.
    var refusedApplicationProtocols: [String]?

    private init(socket: Socket, ssl: OpaquePointer, context: TLSContext, peer: String) {
        self.socket = socket
        self.ssl = ssl
        self.context = context
        self.peer = peer
    }

    deinit {
        SSL_free(ssl)
        socket.close()
    }

    /// A session the next connection to the same server can resume, if the server issued one.
    package var resumableTicket: TLSTicket? {
        guard let pointer = SSL_get1_session(ssl) else { return nil }
        guard SSL_SESSION_is_resumable(pointer) == 1 else {
            SSL_SESSION_free(pointer)
            return nil
        }
        return TLSTicket(pointer: pointer)
    }

    /// Whether this connection resumed an earlier session.
    package var didResume: Bool { SSL_session_reused(ssl) == 1 }

    /// The subject of the certificate the peer presented, if any.
    package var peerSubject: String? { peerCertificate?.subject }

    /// The certificate the peer presented (also after resuming a session), if any.
    package var peerCertificate: Certificate? {
        Certificate.peerCertificate(ofTLSConnection: ssl)
    }

    /// The certificates the peer sent after its own (its intermediates; none after resuming a
    /// session, when nothing was sent).
    package var peerChain: [Certificate] {
        Certificate.peerChain(ofTLSConnection: ssl)
    }

    /// The negotiated protocol ("TLSv1.3").
    package var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    /// The application protocol ALPN selected ("h2"); empty when none was (the client offered no
    /// ALPN, or the server does not do ALPN).
    package var applicationProtocol: String {
        var data: UnsafePointer<UInt8>?
        var count: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &count)
        guard let data, count > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: Int(count)), as: UTF8.self)
    }

    /// Connects to `endpoint` and completes the handshake within `timeout` seconds, verifying the
    /// server's certificate chain and host name. With `resuming`, offers that earlier session, so
    /// a reconnect after an error response costs no certificate signatures. With `proxy`, the TCP
    /// connection goes to the proxy, which is asked for a tunnel to `endpoint` (``ProxyTunnel``), and
    /// TLS runs inside it, verified against `endpoint` all the same.
    package static func connect(
        to endpoint: Endpoint, context: TLSContext, timeout: Double, resuming ticket: TLSTicket? = nil,
        through proxy: ProxyTunnel? = nil
    ) throws -> TLSSession {
        let deadline = Monotonic.now() + timeout
        let socket =
            try proxy?.connect(to: endpoint, timeout: timeout)
            ?? Socket.connect(host: endpoint.host, port: endpoint.port, timeout: timeout)
        ERR_clear_error()
        guard let ssl = SSL_new(context.pointer) else {
            throw LegacyAPNsError(.tlsConfiguration, "cannot create a TLS session: \(OpenSSLError.drain("SSL_new"))")
        }
        let session = TLSSession(socket: socket, ssl: ssl, context: context, peer: endpoint.description)
        _ = SSL_set_fd(ssl, socket.descriptor)
        SSL_set_connect_state(ssl)
        if !isIPAddress(endpoint.host) { _ = COpenSSL_SSL_set_tlsext_host_name(ssl, endpoint.host) }
        guard SSL_set1_host(ssl, endpoint.host) == 1 else {
            throw LegacyAPNsError(.tlsConfiguration, "cannot verify host name '\(endpoint.host)'")
        }
        if let ticket {
            _ = SSL_set_session(ssl, ticket.pointer)
            // A TLS 1.2 session resumes only as TLS 1.2 (the server chose it, in a handshake that
            // verified both sides). Offering TLS 1.3 as well would make the hello carry a key
            // share, generated for every reconnect and never used. Should the server not resume,
            // the new handshake is TLS 1.2, which the configuration allows.
            if SSL_SESSION_get_protocol_version(ticket.pointer) == TLS1_2_VERSION {
                _ = COpenSSL_SSL_set_max_proto_version(ssl, TLS1_2_VERSION)
            }
        }
        try session.handshake(deadline: deadline, step: SSL_connect, isClient: true)
        return session
    }

    /// Completes the server side of a handshake on an accepted socket. On failure the alert
    /// OpenSSL queued is given `drainTimeout` seconds to reach the client (see ``closeGently(drainTimeout:)``)
    /// before the socket closes.
    ///
    /// `interruption`: another thread may end the handshake early (a server making room for a new
    /// client). The handshake asks `abandoned()` whenever it wakes, which is when `wake` is
    /// signalled (without one, at least every ``interruptionCheckInterval``); once it returns an
    /// error, the socket is closed at once and that error thrown.
    package static func accept(
        _ socket: Socket, context: TLSContext, peer: String, timeout: Double, drainTimeout: Double,
        interruption: Interruption? = nil
    ) throws -> TLSSession {
        let session = try beginAccepting(socket, context: context, peer: peer)
        let ssl = session.ssl
        // For the ALPN select callback (unretained: the SSL lives and dies with the session).
        _ = SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(session).toOpaque())
        do {
            try session.handshake(
                deadline: Monotonic.now() + timeout, step: SSL_accept, isClient: false, interruption: interruption)
        } catch {
            if let abandoned = interruption?.abandoned() {
                session.socket.close()
                throw abandoned
            }
            session.closeGently(drainTimeout: drainTimeout)
            throw error
        }
        return session
    }

    /// Starts the server side of a handshake on an accepted socket without waiting, for an event
    /// loop: call ``continueHandshake()`` until it is done, whenever the socket is ready for what it
    /// asked for. On failure, close with ``beginGentleClose()`` so the alert reaches the client.
    package static func beginAccepting(_ socket: Socket, context: TLSContext, peer: String) throws -> TLSSession {
        ERR_clear_error()
        guard let ssl = SSL_new(context.pointer) else {
            throw LegacyAPNsError(.tlsConfiguration, "cannot create a TLS session: \(OpenSSLError.drain("SSL_new"))")
        }
        let session = TLSSession(socket: socket, ssl: ssl, context: context, peer: peer)
        _ = SSL_set_fd(ssl, socket.descriptor)
        SSL_set_accept_state(ssl)
        return session
    }

    /// One step of a handshake begun with ``beginAccepting(_:context:peer:)``, without waiting:
    /// ``IOResult/done(_:)`` when it is complete, ``IOResult/wantRead`` or ``IOResult/wantWrite``
    /// when it needs the socket, ``IOResult/failed(_:)`` with the reason worded for people.
    package func continueHandshake() -> IOResult {
        handshakeStep(SSL_accept, isClient: false)
    }

    private func handshakeStep(_ step: (OpaquePointer?) -> Int32, isClient: Bool) -> IOResult {
        ERR_clear_error()
        let result = step(ssl)
        if result == 1 { return .done(0) }
        let code = SSL_get_error(ssl, result)
        switch code {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default: return .failed(handshakeError(code: code, isClient: isClient))
        }
    }

    /// How another thread ends a server handshake early (see ``accept(_:context:peer:timeout:drainTimeout:interruption:)``).
    package typealias Interruption = (wake: WakeSignal?, abandoned: () -> LegacyAPNsError?)

    /// The longest an interruptible handshake without a wake signal waits before asking again.
    package static let interruptionCheckInterval = 0.1

    private func handshake(
        deadline: Double, step: (OpaquePointer?) -> Int32, isClient: Bool, interruption: Interruption? = nil
    ) throws {
        while true {
            let events: Readiness
            switch handshakeStep(step, isClient: isClient) {
            case .done, .closed: return
            case .wantRead: events = .readable
            case .wantWrite: events = .writable
            case .failed(let error): throw error
            }
            if let abandoned = interruption?.abandoned() { throw abandoned }
            let remaining = deadline - Monotonic.now()
            let ready: Bool
            if let wake = interruption?.wake {
                ready = wait(for: events, timeout: remaining, wake: wake)
            } else if interruption != nil {
                // Slices: a timed-out slice before the deadline is not the end.
                let slice = Swift.min(remaining, Self.interruptionCheckInterval)
                ready = wait(for: events, timeout: slice) || remaining > slice
            } else {
                ready = wait(for: events, timeout: remaining)
            }
            if let abandoned = interruption?.abandoned() { throw abandoned }
            guard remaining > 0, ready else {
                throw LegacyAPNsError(.timedOut, "TLS handshake with \(peer) timed out")
            }
        }
    }

    private func handshakeError(code: Int32, isClient: Bool) -> LegacyAPNsError {
        let errorNumber = errno
        let queue = OpenSSLError.drain(isClient ? "SSL_connect" : "SSL_accept")
        if isClient, queue.contains(reason: SSL_R_CERTIFICATE_VERIFY_FAILED) {
            let result = SSL_get_verify_result(ssl)
            let text = String(cString: X509_verify_cert_error_string(result))
            if result == Int(X509_V_ERR_HOSTNAME_MISMATCH) || result == Int(X509_V_ERR_IP_ADDRESS_MISMATCH) {
                return LegacyAPNsError(.serverUntrusted, "the certificate of \(peer) does not match its name: \(text)")
            }
            return LegacyAPNsError(
                .serverUntrusted,
                "the certificate of \(peer) is not trusted: \(text) (for a local gateway, pass its CA with --ca-file)")
        }
        if let refused = applicationProtocolRefusal(queue, isClient: isClient) { return refused }
        if let rejected = certificateRejection(queue) { return rejected }
        if let refused = versionRefusal(queue, isClient: isClient) { return refused }
        if !isClient, queue.contains(reason: SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) {
            return LegacyAPNsError(.certificateRejected, "client \(peer) presented no certificate")
        }
        if !isClient, queue.contains(reason: SSL_R_CERTIFICATE_VERIFY_FAILED) {
            let text = String(cString: X509_verify_cert_error_string(SSL_get_verify_result(ssl)))
            return LegacyAPNsError(.certificateRejected, "client certificate from \(peer) refused: \(text)")
        }
        if code == SSL_ERROR_SYSCALL || code == SSL_ERROR_ZERO_RETURN || queue.messages.isEmpty {
            let why = errorNumber == 0 ? "the connection closed" : errnoText(errorNumber)
            return LegacyAPNsError(.handshakeFailed, "TLS handshake with \(peer) failed: \(why)")
        }
        return LegacyAPNsError(
            .handshakeFailed, "TLS handshake with \(peer) failed: \(queue.shortReason ?? queue.description)")
    }

    /// ALPN found no common protocol, worded for people on both sides.
    private func applicationProtocolRefusal(_ queue: OpenSSLError, isClient: Bool) -> LegacyAPNsError? {
        if isClient, queue.contains(reason: SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL) {
            let offered = context.applicationProtocols.joined(separator: ", ")
            return LegacyAPNsError(
                .handshakeFailed,
                "\(peer) refused the TLS handshake: it speaks none of the protocols offered by ALPN (\(offered))")
        }
        if !isClient, queue.contains(reason: SSL_R_NO_APPLICATION_PROTOCOL) {
            let offered = refusedApplicationProtocols.map { $0.joined(separator: ", ") } ?? "unknown protocols"
            let spoken = context.applicationProtocols.joined(separator: ", ")
            return LegacyAPNsError(
                .handshakeFailed,
                "client \(peer) offered only \(offered) by ALPN; this server speaks \(spoken) (alert no_application_protocol sent)"
            )
        }
        return nil
    }

    /// The two sides share no TLS version: the peer answered protocol_version, or offered or chose
    /// only versions this side refuses. Worded for people, as ``LegacyAPNsError/Code-swift.struct/protocolRefused``
    /// (which stops a sender at once: retrying cannot help).
    private func versionRefusal(_ queue: OpenSSLError, isClient: Bool) -> LegacyAPNsError? {
        let reasons = [
            SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, SSL_R_UNSUPPORTED_PROTOCOL, SSL_R_VERSION_TOO_LOW,
            SSL_R_NO_PROTOCOLS_AVAILABLE,
        ]
        guard reasons.contains(where: { queue.contains(reason: $0) }) else { return nil }
        let offered = context.minimum == .tls13 ? "TLS 1.3" : "TLS 1.2 and newer"
        if isClient {
            let fix =
                context.minimum == .tls13
                ? "it speaks only older versions (allow TLS 1.2: the minimum version is set to 1.3)"
                : "it speaks only TLS versions older than 1.2, which are insecure and not offered "
                    + "(Apple's gateway spoke TLS 1.2)"
            return LegacyAPNsError(.protocolRefused, "the gateway \(peer) refused \(offered): \(fix)")
        }
        return LegacyAPNsError(
            .protocolRefused, "client \(peer) speaks no TLS version this gateway accepts (\(offered))")
    }

    /// An alert from the peer saying it refused our certificate, worded for people.
    private func certificateRejection(_ queue: OpenSSLError) -> LegacyAPNsError? {
        let alerts: [(Int32, String)] = [
            (SSL_R_TLSV1_ALERT_UNKNOWN_CA, "its issuer is unknown to the gateway"),
            (SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED, "it has expired"),
            (SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED, "it was revoked"),
            (SSL_R_SSLV3_ALERT_BAD_CERTIFICATE, "the gateway calls it bad"),
            (SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE, "the gateway does not support it"),
            (SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN, "the gateway could not verify it"),
            (SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED, "the gateway requires a client certificate"),
            (SSL_R_TLSV1_ALERT_ACCESS_DENIED, "the gateway denied access"),
        ]
        guard let (_, why) = alerts.first(where: { queue.contains(reason: $0.0) }) else { return nil }
        var reason = "\(peer) refused the client certificate: \(why)"
        if let certificate = context.identity?.certificate {
            let name = certificate.subjectName.commonName.map { "'\($0)'" } ?? certificate.subject
            let issuer = certificate.issuerName.commonName.map { " (issued by '\($0)')" } ?? ""
            reason = "\(peer) refused the client certificate \(name)\(issuer): \(why)"
            let now = Int64(time(nil))
            if certificate.notAfter < now {
                reason += " (it expired on \(certificate.notAfterISO8601))"
            }
        }
        return LegacyAPNsError(.certificateRejected, reason)
    }

    /// Reads decrypted bytes into `buffer`.
    package func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        ERR_clear_error()
        let count = SSL_read(ssl, buffer.baseAddress, Int32(Swift.min(buffer.count, Int(Int32.max))))
        if count > 0 { return .done(Int(count)) }
        return ioFailure(SSL_get_error(ssl, count), operation: "read")
    }

    /// Writes bytes (a partial write returns how many were taken).
    package func write(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        guard bytes.count > 0 else { return .done(0) }
        ERR_clear_error()
        let count = SSL_write(ssl, bytes.baseAddress, Int32(Swift.min(bytes.count, Int(Int32.max))))
        if count > 0 { return .done(Int(count)) }
        return ioFailure(SSL_get_error(ssl, count), operation: "write")
    }

    private func ioFailure(_ code: Int32, operation: String) -> IOResult {
        let errorNumber = errno
        switch code {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL:
            let queue = OpenSSLError.drain(operation)
            if errorNumber == 0 && queue.messages.isEmpty { return .closed }
            if errorNumber == EPIPE || errorNumber == ECONNRESET {
                return .failed(
                    LegacyAPNsError(.connectionFailed, "\(peer) closed the connection (\(errnoText(errorNumber)))"))
            }
            return .failed(
                LegacyAPNsError(.connectionFailed, "\(operation) on \(peer) failed: \(errnoText(errorNumber))"))
        default:
            let queue = OpenSSLError.drain(operation)
            if let rejected = certificateRejection(queue) { return .failed(rejected) }
            return .failed(
                LegacyAPNsError(
                    .connectionFailed, "TLS \(operation) on \(peer) failed: \(queue.shortReason ?? queue.description)"))
        }
    }

    /// Waits for the socket (poll(2) lives in ``Poll``, nowhere else).
    package func wait(for events: Readiness, timeout: Double) -> Bool {
        socket.wait(for: events, timeout: timeout)
    }

    /// Waits for the socket or for `wake` (another thread has something for this one).
    package func wait(for events: Readiness, timeout: Double, wake: WakeSignal) -> Bool {
        socket.wait(for: events, timeout: timeout, wake: wake)
    }

    /// Sends close_notify (best effort, never blocks) and closes the socket.
    package func close() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
        socket.close()
    }

    /// Frees the session's read and write buffers (about 34 KB with read-ahead) while nothing
    /// is buffered, for a connection that is about to sit idle; OpenSSL allocates them again at
    /// the next read or write. False when they are in use (then they stay).
    @discardableResult
    package func releaseBuffers() -> Bool { SSL_free_buffers(ssl) == 1 }

    /// The first half of ``closeGently(drainTimeout:)``, for event loops that cannot wait:
    /// close_notify and FIN. The owner then discards what still arrives
    /// (``Socket/discardAvailable()``) until the peer closes or its drain deadline passes, then
    /// closes the socket (not ``close()``: a second SSL_shutdown would read the peer's end of
    /// stream as an error, and OpenSSL drops the session from the resumption cache for that).
    package func beginGentleClose() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
        socket.shutdownWrite()
    }

    /// A gateway's goodbye: close_notify, FIN, then read and discard what the peer still sends for
    /// up to `drainTimeout` seconds before closing. Closing with unread input would make the
    /// kernel send a reset, and a reset destroys the error response the peer has not read yet.
    package func closeGently(drainTimeout: Double) {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
        socket.shutdownWrite()
        socket.drain(for: drainTimeout)
        socket.close()
    }

    private static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

/// A resumable TLS session (an `SSL_SESSION`), kept by a connection slot between connections.
package final class TLSTicket {
    let pointer: OpaquePointer

    init(pointer: OpaquePointer) { self.pointer = pointer }

    deinit { SSL_SESSION_free(pointer) }
}
