extension ProviderToken {
    /// Why a provider token was refused: a value a server can switch on to pick Apple's reason,
    /// with a ``description`` for logs.
    ///
    /// Apple answers 403 `MissingProviderToken` for ``missing`` and 403 `InvalidProviderToken` for
    /// every other case. `ExpiredProviderToken` (an ``ProviderToken/issuedAt`` more than an hour
    /// old) and `UnrelatedKeyIdInToken` (another key than the connection's first) depend on the
    /// server's clock and connection, so they are the server's own checks on a parsed token.
    ///
    /// Texts carried in cases come from the untrusted token and are cut to 40 characters.
    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// No token: an empty value, or `bearer` with nothing after it.
        case missing
        /// Not a compact JWS of three base64url parts whose header and claims are JSON objects
        /// without repeated names; the text says what is wrong.
        case malformed(String)
        /// The header has no `alg`.
        case missingAlgorithm
        /// The header's `alg` is not `ES256` (`none`, `HS256`, `RS256`, ..., or not a string, shown
        /// as JSON).
        case unsupportedAlgorithm(String)
        /// The header has a parameter other than `alg`, `kid` and `typ` (`jku`, `x5u`, `crit`, ...).
        case unexpectedHeaderParameter(String)
        /// The header's `typ` is there but is not `JWT`.
        case unsupportedType(String)
        /// The header has no `kid`.
        case missingKeyID
        /// The header's `kid` is not 10 characters A-Z 0-9 (or not a string, shown as JSON).
        case invalidKeyID(String)
        /// The claims have no `iss`.
        case missingIssuer
        /// The `iss` claim is not a team id of 10 characters A-Z 0-9 (or not a string).
        case invalidIssuer(String)
        /// The claims have no `iat`.
        case missingIssuedAt
        /// The `iat` claim is not a whole, non-negative number of seconds: a string, a fraction,
        /// an exponent, a negative number or one too large (shown as JSON).
        case invalidIssuedAt(String)
        /// The signature does not have the 64 bytes of ES256's r ‖ s; a DER-encoded ECDSA
        /// signature (70 to 72 bytes, what OpenSSL's signing functions return) lands here.
        case invalidSignatureLength(Int)
        /// The token is well formed but its signature does not verify with the key.
        case badSignature

        /// The problem in words, naming the part of the token and what APNs expects.
        public var description: String {
            switch self {
            case .missing: "no provider token (expected \"bearer <JWT>\")"
            case .malformed(let detail): "malformed provider token: \(detail)"
            case .missingAlgorithm: "provider token header has no \"alg\", expected \"ES256\""
            case .unsupportedAlgorithm(let algorithm):
                "provider token is signed with \(algorithm), APNs accepts only ES256"
            case .unexpectedHeaderParameter(let name):
                "provider token header has \"\(name)\", expected only \"alg\", \"kid\" (and \"typ\")"
            case .unsupportedType(let type): "provider token header has \"typ\" \(type), expected \"JWT\""
            case .missingKeyID: "provider token header has no \"kid\" (the 10-character key id)"
            case .invalidKeyID(let keyID):
                "provider token \"kid\" \(keyID) is not a key id (10 characters A-Z and 0-9)"
            case .missingIssuer: "provider token claims have no \"iss\" (the 10-character team id)"
            case .invalidIssuer(let issuer):
                "provider token \"iss\" \(issuer) is not a team id (10 characters A-Z and 0-9)"
            case .missingIssuedAt: "provider token claims have no \"iat\" (UNIX seconds)"
            case .invalidIssuedAt(let value):
                "provider token \"iat\" \(value) is not a whole, non-negative number of UNIX seconds"
            case .invalidSignatureLength(let count):
                count >= 68 && count <= 72
                    ? "provider token signature has \(count) bytes (DER?), ES256 needs the 64-byte r ‖ s"
                    : "provider token signature has \(count) bytes, ES256 needs the 64-byte r ‖ s"
            case .badSignature: "provider token signature does not verify with the key"
            }
        }
    }
}
