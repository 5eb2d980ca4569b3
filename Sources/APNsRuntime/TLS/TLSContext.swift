import APNsCore
import APNsCredentials
internal import COpenSSL

/// An `SSL_CTX` configured for one side of the connection. Shared by every connection of a client
/// or a simulator.
package final class TLSContext: @unchecked Sendable {
    // @unchecked: the SSL_CTX is fully configured in the initialiser and only read afterwards
    // (SSL_new), which OpenSSL allows from any thread.

    let pointer: OpaquePointer
    /// The local identity, for wording errors ("your certificate expired on ...").
    package let identity: ClientIdentity?
    /// The oldest TLS version this side speaks, for wording errors ("refused TLS 1.2 and newer").
    package let minimum: TLSConfiguration.Version

    private init(pointer: OpaquePointer, identity: ClientIdentity?, minimum: TLSConfiguration.Version) {
        self.pointer = pointer
        self.identity = identity
        self.minimum = minimum
    }

    deinit { SSL_CTX_free(pointer) }

    /// A client context: verifies the server against `configuration.trust`.
    package static func client(_ configuration: TLSConfiguration) throws -> TLSContext {
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
        return context
    }

    /// A server context that requires a client certificate chaining to `clientTrust` and speaks
    /// TLS `minimum` (1.2 unless raised) up to `maximum`.
    package static func server(
        identity: ClientIdentity, clientTrust: [Certificate], minimum: TLSConfiguration.Version = .tls12,
        maximum: TLSConfiguration.Version
    ) throws -> TLSContext {
        let context = try make(method: TLS_server_method(), identity: identity, minimum: minimum)
        _ = COpenSSL_SSL_CTX_set_max_proto_version(context.pointer, maximum == .tls13 ? TLS1_3_VERSION : TLS1_2_VERSION)
        SSL_CTX_set_verify(context.pointer, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        try addTrusted(clientTrust, to: context)
        for certificate in clientTrust { _ = SSL_CTX_add_client_CA(context.pointer, certificate.pointer) }
        let sessionContext: [UInt8] = Array("legacy-apns-simulator".utf8)
        _ = SSL_CTX_set_session_id_context(context.pointer, sessionContext, UInt32(sessionContext.count))
        // A client that reconnects after an error response can resume its session instead of
        // repeating the certificate handshake. SSL_OP_NO_TICKET keeps sessions in this context's
        // cache: TLS 1.2 resumes by session ID, TLS 1.3 by a stateful ticket (one per connection),
        // so resuming costs no ticket encryption and no certificate parsing.
        _ = SSL_CTX_set_num_tickets(context.pointer, 1)
        SSL_CTX_set_options(context.pointer, COpenSSL_SSL_OP_NO_TICKET)
        return context
    }

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
        if let identity {
            guard SSL_CTX_use_certificate(pointer, identity.certificate.pointer) == 1,
                SSL_CTX_use_PrivateKey(pointer, identity.privateKey.pointer) == 1
            else {
                throw LegacyAPNsError(
                    .tlsConfiguration,
                    "cannot use the certificate and key: \(OpenSSLError.drain("SSL_CTX_use_certificate"))")
            }
            for certificate in identity.chain {
                guard COpenSSL_SSL_CTX_add1_chain_cert(pointer, certificate.pointer) == 1 else {
                    throw LegacyAPNsError(
                        .tlsConfiguration,
                        "cannot add a chain certificate: \(OpenSSLError.drain("SSL_CTX_add1_chain_cert"))")
                }
            }
            guard SSL_CTX_check_private_key(pointer) == 1 else {
                throw LegacyAPNsError(.keyMismatch, "private key does not match the certificate")
            }
        }
        return context
    }

    private static func addTrusted(_ certificates: [Certificate], to context: TLSContext) throws {
        guard !certificates.isEmpty else {
            throw LegacyAPNsError(.tlsConfiguration, "no trusted CA certificates given")
        }
        let store = SSL_CTX_get_cert_store(context.pointer)
        for certificate in certificates {
            ERR_clear_error()
            if X509_STORE_add_cert(store, certificate.pointer) != 1 {
                ERR_clear_error()  // already present is fine
            }
        }
    }
}
