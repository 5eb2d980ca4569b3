import APNsCore
internal import COpenSSL

// What the TLS code (APNsRuntime) does with certificates and keys, done here, where their OpenSSL
// objects live: the runtime lends its `SSL_CTX*`, `SSL*` or `X509_STORE_CTX*` for one call and
// never sees an `X509*` or an `EVP_PKEY*` (ARCHITECTURE.md: no C pointer leaves its module).
// Nothing is copied or parsed again: OpenSSL takes its own reference to each object.

extension ClientIdentity {
    /// Makes this identity the one the TLS context (`SSL_CTX*`) presents: certificate, key and
    /// chain, the key checked against the certificate.
    package func install(inTLSContext context: OpaquePointer) throws {
        guard SSL_CTX_use_certificate(context, certificate.pointer) == 1,
            SSL_CTX_use_PrivateKey(context, privateKey.pointer) == 1
        else {
            throw LegacyAPNsError(
                .tlsConfiguration,
                "cannot use the certificate and key: \(OpenSSLError.drain("SSL_CTX_use_certificate"))")
        }
        for certificate in chain {
            guard COpenSSL_SSL_CTX_add1_chain_cert(context, certificate.pointer) == 1 else {
                throw LegacyAPNsError(
                    .tlsConfiguration,
                    "cannot add a chain certificate: \(OpenSSLError.drain("SSL_CTX_add1_chain_cert"))")
            }
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw LegacyAPNsError(.keyMismatch, "private key does not match the certificate")
        }
    }
}

extension Certificate {
    /// Adds `certificates` to the trust store of the TLS context (`SSL_CTX*`); one already there
    /// is fine.
    package static func trust(_ certificates: [Certificate], inTLSContext context: OpaquePointer) {
        let store = SSL_CTX_get_cert_store(context)
        for certificate in certificates {
            ERR_clear_error()
            if X509_STORE_add_cert(store, certificate.pointer) != 1 {
                ERR_clear_error()  // already present is fine
            }
        }
    }

    /// Names `certificates` (their subjects) as the CAs a server (`SSL_CTX*`) asks clients for.
    package static func announceClientAuthorities(_ certificates: [Certificate], inTLSContext context: OpaquePointer) {
        for certificate in certificates { _ = SSL_CTX_add_client_CA(context, certificate.pointer) }
    }

    /// The certificate the peer of a TLS connection (`SSL*`) presented, if any.
    package static func peerCertificate(ofTLSConnection connection: OpaquePointer) -> Certificate? {
        SSL_get1_peer_certificate(connection).map(Certificate.init(taking:))
    }

    /// The certificates the peer of a TLS connection (`SSL*`) presented after its own (the
    /// intermediates it sent; on a server, the client's chain without its certificate).
    package static func peerChain(ofTLSConnection connection: OpaquePointer) -> [Certificate] {
        guard let stack = SSL_get_peer_cert_chain(connection) else { return [] }
        return (0..<COpenSSL_sk_X509_num(stack)).compactMap { index in
            COpenSSL_sk_X509_value(stack, index).map(Certificate.init(retaining:))
        }
    }

    /// The SHA-256 fingerprint of the certificate a verification (`X509_STORE_CTX*`, in a verify
    /// callback) is about, if any.
    package static func fingerprintOfCertificate(inVerification verification: OpaquePointer) -> [UInt8]? {
        X509_STORE_CTX_get0_cert(verification).map { Certificate(retaining: $0).sha256Fingerprint }
    }
}
