import APNsCore
import APNsCredentials
internal import COpenSSL

/// An `SSL_CTX` configured for one side of the connection. Shared by every connection of a client
/// or a simulator.
package final class TLSContext: @unchecked Sendable {
    // @unchecked: the SSL_CTX is fully configured in the initialiser and only read afterwards
    // (SSL_new), which OpenSSL allows from any thread; the ALPN lists are set by the factories
    // before the context is returned, and never change.

    let pointer: OpaquePointer
    /// The local identity, for wording errors ("your certificate expired on ...").
    package let identity: ClientIdentity?
    /// ALPN: the protocols a client offers, or a server accepts, most preferred first (empty: no
    /// ALPN). Set by the factories, before the context is shared.
    package private(set) var applicationProtocols: [String] = []
    /// The server's list in wire form, read by the ALPN select callback.
    private var serverProtocols: ApplicationProtocolList?
    /// Kept alive for the verify callback, which finds it through the context's ex_data.
    private var pins: PinnedCertificates?
    /// The oldest TLS version this side speaks, for wording errors ("refused TLS 1.2 and newer").
    package let minimum: TLSConfiguration.Version

    private init(pointer: OpaquePointer, identity: ClientIdentity?, minimum: TLSConfiguration.Version) {
        self.pointer = pointer
        self.identity = identity
        self.minimum = minimum
    }

    deinit { SSL_CTX_free(pointer) }

    /// Whether a server context asks clients for a certificate.
    package enum ClientCertificates: Sendable {
        /// Refuse clients without a certificate chaining to the trusted CAs (the binary gateway).
        case required
        /// Ask for one and verify it against the trusted CAs if sent, but serve clients without one
        /// (the HTTP/2 API: no certificate means token authentication).
        case optional
        /// Require one that chains to the trusted CAs **or** whose SHA-256 fingerprint is one of
        /// these (pinned certificates pass even when expired: the bridge's old senders).
        case requiredOrPinned(Set<[UInt8]>)
    }

    /// A client context: verifies the server against `configuration.trust`, and offers
    /// `applicationProtocols` by ALPN when given (`["h2"]` for the HTTP/2 provider API).
    package static func client(_ configuration: TLSConfiguration, applicationProtocols: [String] = []) throws
        -> TLSContext
    {
        let context = try make(
            method: TLS_client_method(), identity: configuration.identity, minimum: configuration.minimumVersion)
        SSL_CTX_set_verify(context.pointer, SSL_VERIFY_PEER, nil)
        switch configuration.trust {
        case .systemDefault:
            guard SSL_CTX_set_default_verify_paths(context.pointer) == 1 else {
                throw LegacyAPNsError(
                    .tlsConfiguration,
                    "cannot load the system CA store: \(OpenSSLError.drain("SSL_CTX_set_default_verify_paths"))")
            }
        case .certificates(let certificates):
            try addTrusted(certificates, to: context)
        }
        if !applicationProtocols.isEmpty {
            let wire = try ApplicationProtocolList(applicationProtocols)
            // Returns 0 on success, unlike most of OpenSSL.
            guard SSL_CTX_set_alpn_protos(context.pointer, wire.bytes, UInt32(wire.count)) == 0 else {
                throw LegacyAPNsError(
                    .tlsConfiguration,
                    "cannot offer ALPN \(applicationProtocols): \(OpenSSLError.drain("SSL_CTX_set_alpn_protos"))")
            }
            context.applicationProtocols = applicationProtocols
        }
        return context
    }

    /// A server context that requires a client certificate chaining to `clientTrust` (or, with
    /// `clientCertificates: .optional`, verifies one only if sent) and speaks TLS `minimum` (1.2
    /// unless raised) up to `maximum`.
    ///
    /// With `applicationProtocols` (`["h2"]`), ALPN selects the first of them the client offers; a
    /// client that offers only others is refused with the `no_application_protocol` alert, and a
    /// client that offers none at all is served (the HTTP/2 API speaks HTTP/2 to it, as APNs does).
    package static func server(
        identity: ClientIdentity, clientTrust: [Certificate], minimum: TLSConfiguration.Version = .tls12,
        maximum: TLSConfiguration.Version, clientCertificates: ClientCertificates = .required,
        applicationProtocols: [String] = [], sessionTicketKeys: [UInt8]? = nil
    ) throws -> TLSContext {
        let context = try make(method: TLS_server_method(), identity: identity, minimum: minimum)
        _ = COpenSSL_SSL_CTX_set_max_proto_version(context.pointer, maximum == .tls13 ? TLS1_3_VERSION : TLS1_2_VERSION)
        switch clientCertificates {
        case .required: SSL_CTX_set_verify(context.pointer, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        case .optional: SSL_CTX_set_verify(context.pointer, SSL_VERIFY_PEER, nil)
        case .requiredOrPinned(let fingerprints):
            let pins = PinnedCertificates(fingerprints)
            context.pins = pins
            _ = SSL_CTX_set_ex_data(context.pointer, 0, Unmanaged.passUnretained(pins).toOpaque())
            SSL_CTX_set_verify(
                context.pointer, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, PinnedCertificates.verify)
        }
        if !applicationProtocols.isEmpty {
            let list = try ApplicationProtocolList(applicationProtocols)
            context.serverProtocols = list
            context.applicationProtocols = applicationProtocols
            SSL_CTX_set_alpn_select_cb(
                context.pointer, selectApplicationProtocol, Unmanaged.passUnretained(list).toOpaque())
        }
        // Pinned certificates alone need no CA (they are accepted by fingerprint).
        if !(clientTrust.isEmpty && context.pins != nil) { try addTrusted(clientTrust, to: context) }
        Certificate.announceClientAuthorities(clientTrust, inTLSContext: context.pointer)
        let sessionContext: [UInt8] = Array("legacy-apns-simulator".utf8)
        _ = SSL_CTX_set_session_id_context(context.pointer, sessionContext, UInt32(sessionContext.count))
        // A client that reconnects after an error response can resume its session instead of
        // repeating the certificate handshake. SSL_OP_NO_TICKET keeps sessions in this context's
        // cache: TLS 1.2 resumes by session ID, TLS 1.3 by a stateful ticket (one per connection),
        // so resuming costs no ticket encryption and no certificate parsing.
        _ = SSL_CTX_set_num_tickets(context.pointer, 1)
        if let sessionTicketKeys {
            // A fleet behind a load balancer: the session travels in a ticket sealed with keys
            // every instance shares, so a sender that reconnects to another instance resumes too.
            guard sessionTicketKeys.count == Self.sessionTicketKeyLength else {
                throw LegacyAPNsError(
                    .tlsConfiguration,
                    "a session ticket key is \(Self.sessionTicketKeyLength) bytes, not \(sessionTicketKeys.count)")
            }
            var keys = sessionTicketKeys
            guard
                SSL_CTX_ctrl(context.pointer, SSL_CTRL_SET_TLSEXT_TICKET_KEYS, keys.count, &keys) == 1
            else {
                throw LegacyAPNsError(
                    .tlsConfiguration,
                    "cannot install the session ticket key: \(OpenSSLError.drain("SSL_CTX_set_tlsext_ticket_keys"))")
            }
        } else {
            SSL_CTX_set_options(context.pointer, COpenSSL_SSL_OP_NO_TICKET)
        }
        return context
    }

    /// The length of the keys that seal session tickets (OpenSSL's: a 16-byte name, a 32-byte
    /// HMAC key and a 32-byte AES key).
    package static let sessionTicketKeyLength = 80

    private static func make(method: OpaquePointer?, identity: ClientIdentity?, minimum: TLSConfiguration.Version)
        throws -> TLSContext
    {
        ERR_clear_error()
        guard let pointer = SSL_CTX_new_ex(OpenSSLLibrary.shared.context, nil, method) else {
            throw LegacyAPNsError(
                .tlsConfiguration, "cannot create a TLS context: \(OpenSSLError.drain("SSL_CTX_new_ex"))")
        }
        let context = TLSContext(pointer: pointer, identity: identity, minimum: minimum)
        _ = COpenSSL_SSL_CTX_set_min_proto_version(pointer, minimum == .tls13 ? TLS1_3_VERSION : TLS1_2_VERSION)
        SSL_CTX_set_options(
            pointer,
            COpenSSL_SSL_OP_NO_COMPRESSION | COpenSSL_SSL_OP_NO_RENEGOTIATION | COpenSSL_SSL_OP_IGNORE_UNEXPECTED_EOF)
        _ = COpenSSL_SSL_CTX_set_mode(
            pointer, COpenSSL_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | COpenSSL_SSL_MODE_ENABLE_PARTIAL_WRITE)
        _ = COpenSSL_SSL_CTX_set_read_ahead(pointer, 1)
        try identity?.install(inTLSContext: pointer)
        return context
    }

    /// ALPN on the server: the first of our protocols the client offers, else the fatal
    /// `no_application_protocol` alert (the client's offer is kept on its ``TLSSession`` for the
    /// error message). Not called at all when the client offers no ALPN.
    private static let selectApplicationProtocol: SSL_CTX_alpn_select_cb_func = {
        ssl, out, outCount, offered, offeredCount, argument in
        guard let out, let outCount, let offered, let argument else { return SSL_TLSEXT_ERR_ALERT_FATAL }
        let list = Unmanaged<ApplicationProtocolList>.fromOpaque(argument).takeUnretainedValue()
        var selected: UnsafeMutablePointer<UInt8>?
        let result = SSL_select_next_proto(&selected, outCount, list.bytes, UInt32(list.count), offered, offeredCount)
        if result == OPENSSL_NPN_NEGOTIATED, let selected {
            out.pointee = UnsafePointer(selected)
            return SSL_TLSEXT_ERR_OK
        }
        if let ssl, let owner = SSL_get_ex_data(ssl, 0) {
            let names = ApplicationProtocolList.names(UnsafeRawBufferPointer(start: offered, count: Int(offeredCount)))
            Unmanaged<TLSSession>.fromOpaque(owner).takeUnretainedValue().refusedApplicationProtocols = names
        }
        return SSL_TLSEXT_ERR_ALERT_FATAL
    }

    private static func addTrusted(_ certificates: [Certificate], to context: TLSContext) throws {
        guard !certificates.isEmpty else {
            throw LegacyAPNsError(.tlsConfiguration, "no trusted CA certificates given")
        }
        Certificate.trust(certificates, inTLSContext: context.pointer)
    }
}

/// A list of ALPN protocol names in wire form (each name preceded by its length), in memory that
/// stays put for the context's lifetime, as OpenSSL's select callback requires.
private final class ApplicationProtocolList {
    let bytes: UnsafeMutablePointer<UInt8>
    let count: Int

    init(_ names: [String]) throws {
        var wire: [UInt8] = []
        for name in names {
            let utf8 = Array(name.utf8)
            guard !utf8.isEmpty, utf8.count <= 255 else {
                throw LegacyAPNsError(.tlsConfiguration, "ALPN protocol name '\(name)' must have 1 to 255 bytes")
            }
            wire.append(UInt8(utf8.count))
            wire += utf8
        }
        count = wire.count
        bytes = .allocate(capacity: max(count, 1))
        bytes.initialize(from: wire, count: count)
    }

    deinit { bytes.deallocate() }

    /// The names in a wire-form list.
    static func names(_ wire: UnsafeRawBufferPointer) -> [String] {
        var names: [String] = []
        var index = 0
        while index < wire.count {
            let length = Int(wire[index])
            let end = min(wire.count, index + 1 + length)
            names.append(String(decoding: UnsafeRawBufferPointer(rebasing: wire[(index + 1)..<end]), as: UTF8.self))
            index = end
        }
        return names
    }
}
