internal import COpenSSL

extension Certificate {
    /// Whether `issuer` issued this certificate: its subject is this certificate's issuer (and
    /// its key identifiers agree, when both name one), and its public key verifies this
    /// certificate's signature. Nothing else is checked (validity, purpose, the rest of a chain):
    /// for telling apart certificates a TLS handshake has already verified, such as the bridge's
    /// routes by sender CA.
    public func isIssued(by issuer: Certificate) -> Bool {
        guard X509_check_issued(issuer.pointer, pointer) == X509_V_OK else { return false }
        guard let key = X509_get0_pubkey(issuer.pointer) else { return false }
        return X509_verify(pointer, key) == 1
    }
}

extension Certificate {
    /// Whether this certificate chains to one of `anchors`: OpenSSL builds the path from it
    /// through `intermediates` (used only to build the path, trusted for nothing) to an anchor, and
    /// verifies it as a TLS handshake does (`X509_verify_cert`): every signature, the issuers' CA
    /// constraints and path lengths, and every certificate's validity now. An anchor may be an
    /// intermediate CA (a partial chain is enough: the anchor is what is trusted), so a route can
    /// name the CA that issues its senders without its root.
    ///
    /// For the bridge's routes by sender CA: `intermediates` are what the sender presented and the
    /// CAs the bridge trusts, so a sender issued by an intermediate matches a route naming the root.
    public func chains(to anchors: [Certificate], through intermediates: [Certificate] = []) -> Bool {
        guard !anchors.isEmpty, let store = X509_STORE_new() else { return false }
        defer { X509_STORE_free(store) }
        for anchor in anchors where X509_STORE_add_cert(store, anchor.pointer) != 1 {
            ERR_clear_error()  // the same certificate twice is fine
        }
        X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        guard let untrusted = COpenSSL_sk_X509_new_null() else { return false }
        defer { COpenSSL_sk_X509_free(untrusted) }
        for intermediate in intermediates where COpenSSL_sk_X509_push(untrusted, intermediate.pointer) <= 0 {
            return false
        }
        guard let verification = X509_STORE_CTX_new() else { return false }
        defer { X509_STORE_CTX_free(verification) }
        guard X509_STORE_CTX_init(verification, store, pointer, untrusted) == 1 else {
            ERR_clear_error()
            return false
        }
        let verified = X509_verify_cert(verification) == 1
        ERR_clear_error()
        return verified
    }
}
