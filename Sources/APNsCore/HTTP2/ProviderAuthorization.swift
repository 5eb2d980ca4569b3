/// How the connection a request arrived on authenticated, as far as ``ProviderRequestValidator``
/// needs to know: the seam where the caller's credential checks meet the request rules.
///
/// The validator never looks at a JWT. For token auth the caller reads
/// ``ProviderRequestHead/bearerToken``, checks it (signature, key id, team, age, how often it
/// changed on this connection) and passes its verdict here; the validator applies that verdict at
/// its place in the order (after the path and duplicate checks, before the topic).
package enum ProviderAuthorization: Hashable, Sendable {
    /// The outcome of the caller's provider-token check.
    package enum TokenVerdict: Hashable, Sendable {
        /// The token is good. `topics` are the bundle ids (with suffixes) its team may push to, or
        /// nil when the caller does not know them (then every topic is allowed).
        case accepted(topics: [String]?)
        /// The token is not: MissingProviderToken, InvalidProviderToken, ExpiredProviderToken,
        /// UnrelatedKeyIdInToken, TooManyProviderTokenUpdates, ...
        case rejected(ProviderReason)
    }

    /// Certificate auth: the topics the client certificate may push to (its subject UID and the
    /// strings of extension 1.2.840.113635.100.6.3.6), as the TLS layer read them. The
    /// `authorization` header is ignored.
    case certificate(topics: [String])
    /// Token auth (no client certificate), with the caller's verdict on the bearer token.
    case token(TokenVerdict)

    /// Whether this is certificate auth.
    package var isCertificate: Bool {
        if case .certificate = self { return true }
        return false
    }
}
