/// A provider authentication token: the ES256-signed JSON Web Token that a token-based
/// connection to APNs sends in every request's `authorization: bearer <token>` header.
///
/// Immutable; the ``compactSerialization`` is fixed when the token is made or parsed. What we
/// sign is always exactly this (RFC 7515 compact serialization, base64url without padding):
///
/// ```
/// header     {"alg":"ES256","kid":"ABC123DEFG"}      kid: the key id, 10 characters A-Z 0-9
/// claims     {"iss":"DEF123GHIJ","iat":1767225600}   iss: the team id; iat: UNIX seconds
/// signature  r ‖ s, 32 bytes each (RFC 7518 §3.4), never DER
/// token      base64url(header) "." base64url(claims) "." base64url(signature)
/// ```
///
/// Make one with `SigningKey.signProviderToken(keyID:teamID:issuedAt:)` (APNsCredentials) and
/// keep it for one connection: APNs refuses tokens older than an hour and answers 429
/// TooManyProviderTokenUpdates to a connection that changes its token more often than every 20
/// minutes, so sign a new one about every 50 minutes. A server parses what it receives with
/// ``init(authorizationHeaderValue:)`` (structure, header and claims; every problem is a
/// ``Failure`` value) and then checks the signature with `SigningKey.PublicKey.verify(_:)`.
///
/// ```swift
/// // A sender, once per connection and again after ~50 minutes:
/// let key = try SigningKey(pemRepresentation: p8Bytes)
/// let token = try key.signProviderToken(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: now)
/// headers.append(("authorization", token.authorizationHeaderValue))  // "bearer eyJhbGciOi..."
///
/// // A server (a simulator), per request:
/// let received = try ProviderToken(authorizationHeaderValue: value)  // throws ProviderToken.Failure
/// guard let publicKey = acceptedKeys[received.keyID] else { /* InvalidProviderToken */ }
/// try publicKey.verify(received)  // .badSignature when it does not verify
/// if now - received.issuedAt > 3600 { /* ExpiredProviderToken */ }
/// ```
public struct ProviderToken: Sendable, Hashable, CustomStringConvertible {
    /// The signing key's 10-character id (the JWS header's `kid`), e.g. `ABC123DEFG`.
    public let keyID: String
    /// The developer team's 10-character id (the `iss` claim), e.g. `DEF123GHIJ`.
    public let teamID: String
    /// When the token was made (the `iat` claim), in UNIX seconds.
    public let issuedAt: Int64
    /// The token as sent: `<header>.<claims>.<signature>`, each part base64url without padding.
    public let compactSerialization: String
    /// The signature bytes as the token carries them: 64 for a well-formed ES256 token (r ‖ s).
    public let signature: [UInt8]
    /// How many leading bytes of ``compactSerialization`` are the JWS signing input
    /// (`<header>.<claims>`).
    package let signingInputCount: Int

    /// Assembles a token from its parts (for the signer, which has checked them).
    package init(keyID: String, teamID: String, issuedAt: Int64, signingInput: [UInt8], signature: [UInt8]) {
        var compact = signingInput
        compact.append(UInt8(ascii: "."))
        Base64URL.encode(signature, into: &compact)
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
        self.compactSerialization = String(decoding: compact, as: UTF8.self)
        self.signature = signature
        self.signingInputCount = signingInput.count
    }

    /// The value of the HTTP/2 `authorization` header: `bearer <compact serialization>`.
    public var authorizationHeaderValue: String { "bearer " + compactSerialization }

    /// Calls `body` with the JWS signing input, `<header>.<claims>` as ASCII bytes: what the
    /// signature covers.
    package func withSigningInput<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        var compact = compactSerialization
        return try compact.withUTF8 { utf8 in
            try body(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(utf8)[..<signingInputCount]))
        }
    }

    /// "ProviderToken(kid ABC123DEFG, iss DEF123GHIJ, iat 1767225600)": never the signature, since
    /// the token is a credential for as long as it is fresh.
    public var description: String { "ProviderToken(kid \(keyID), iss \(teamID), iat \(issuedAt))" }

    // MARK: Identifiers

    /// How many characters a key id and a team id have.
    public static let identifierLength = 10

    /// Whether `identifier` has the shape of Apple's key and team ids: exactly 10 characters, each
    /// an uppercase ASCII letter or a digit.
    public static func isValidIdentifier(_ identifier: some StringProtocol) -> Bool {
        identifier.utf8.count == identifierLength
            && identifier.utf8.allSatisfy {
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
            }
    }

    /// The deterministic JWS signing input for these values: base64url of
    /// `{"alg":"ES256","kid":"<keyID>"}`, a dot, base64url of `{"iss":"<teamID>","iat":<issuedAt>}`.
    ///
    /// - Throws: ``LegacyAPNsError`` `.invalidValue` when an id is not 10 characters A-Z 0-9 or
    ///   `issuedAt` is negative.
    package static func signingInput(keyID: String, teamID: String, issuedAt: Int64) throws -> [UInt8] {
        try checkIdentifier(keyID, name: "key id", hint: "the KEYID in AuthKey_<KEYID>.p8")
        try checkIdentifier(teamID, name: "team id", hint: "shown in the developer account's membership details")
        guard issuedAt >= 0 else {
            throw LegacyAPNsError(.invalidValue, "issued-at time \(issuedAt) is negative, expected UNIX seconds")
        }
        var header = Array(#"{"alg":"ES256","kid":""#.utf8)
        header.append(contentsOf: keyID.utf8)
        header.append(contentsOf: #""}"#.utf8)
        var claims = Array(#"{"iss":""#.utf8)
        claims.append(contentsOf: teamID.utf8)
        claims.append(contentsOf: #"","iat":"#.utf8)
        appendDecimal(UInt64(issuedAt), to: &claims)
        claims.append(UInt8(ascii: "}"))
        var input: [UInt8] = []
        Base64URL.encode(header, into: &input)
        input.append(UInt8(ascii: "."))
        Base64URL.encode(claims, into: &input)
        return input
    }

    private static func checkIdentifier(_ identifier: String, name: String, hint: String) throws {
        guard !isValidIdentifier(identifier) else { return }
        let count = identifier.count
        let shown = count <= 40 ? "\"\(identifier)\"" : "\"\(identifier.prefix(40))...\""
        let problem =
            count == identifierLength
            ? "has characters other than A-Z and 0-9" : "has \(count) character\(count == 1 ? "" : "s")"
        throw LegacyAPNsError(
            .invalidValue, "\(name) \(shown) \(problem), expected 10 characters A-Z and 0-9 (\(hint))")
    }
}
