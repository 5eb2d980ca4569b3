import APNsCore
internal import COpenSSL

extension SigningKey {
    /// Signs a provider token for `keyID` and `teamID`, issued at `issuedAt`.
    ///
    /// The header and claims are always serialised the same way, `{"alg":"ES256","kid":"<keyID>"}`
    /// and `{"iss":"<teamID>","iat":<issuedAt>}`, and the signature is the 64-byte r ‖ s of
    /// RFC 7518 §3.4 (ECDSA signatures are randomised, so two tokens for the same values differ
    /// only in their signature).
    ///
    /// ```swift
    /// let token = try key.signProviderToken(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: now)
    /// token.authorizationHeaderValue  // "bearer eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyM0RFRkcifQ..."
    /// ```
    ///
    /// - Parameters:
    ///   - keyID: The key's id (the KEYID of `AuthKey_<KEYID>.p8`): 10 characters A-Z 0-9.
    ///   - teamID: The developer team's id: 10 characters A-Z 0-9.
    ///   - issuedAt: The current time in UNIX seconds (APNs refuses tokens more than an hour old).
    /// - Throws: `LegacyAPNsError` `.invalidValue` for an id of the wrong shape or a negative
    ///   time; `.unsupportedKey` if OpenSSL cannot sign with the key.
    public func signProviderToken(keyID: String, teamID: String, issuedAt: Int64) throws -> ProviderToken {
        let input = try ProviderToken.signingInput(keyID: keyID, teamID: teamID, issuedAt: issuedAt)
        ERR_clear_error()
        guard let der = ECDSASignature.sign(input, key: privateKey.pointer),
            let signature = ECDSASignature.raw(fromDER: der)
        else {
            let detail = OpenSSLError.drain("EVP_DigestSign").shortReason.map { " (\($0))" } ?? ""
            throw LegacyAPNsError(.unsupportedKey, "OpenSSL could not sign with the key\(detail)")
        }
        return ProviderToken(
            keyID: keyID, teamID: teamID, issuedAt: issuedAt, signingInput: input, signature: signature)
    }
}
