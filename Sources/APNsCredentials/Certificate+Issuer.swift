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
