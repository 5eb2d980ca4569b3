import APNsCore
import Testing

/// The structure, header and claims checks of provider tokens (no cryptography: the signatures
/// here are placeholders; signing and verifying are tested with real keys in LegacyAPNsTests).
@Suite struct ProviderTokenParsingTests {
    static let placeholderSignature = [UInt8](repeating: 0xA5, count: 64)

    /// `base64url(header).base64url(claims).base64url(signature)`.
    static func compact(
        _ header: String = #"{"alg":"ES256","kid":"ABC123DEFG"}"#,
        _ claims: String = #"{"iss":"DEF123GHIJ","iat":1700000000}"#,
        signature: [UInt8] = placeholderSignature
    ) -> String {
        Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8)) + "."
            + Base64URL.encode(signature)
    }

    @Test func readsKeyIDTeamIDAndIssuedAt() throws {
        let text = Self.compact()
        let token = try ProviderToken(compactSerialization: text)
        #expect(token.keyID == "ABC123DEFG")
        #expect(token.teamID == "DEF123GHIJ")
        #expect(token.issuedAt == 1_700_000_000)
        #expect(token.signature == Self.placeholderSignature)
        #expect(token.compactSerialization == text)
        #expect(token.authorizationHeaderValue == "bearer " + text)
        let signingInput = token.withSigningInput { Array($0) }
        #expect(
            String(decoding: signingInput, as: UTF8.self) == text.split(separator: ".").prefix(2).joined(separator: ".")
        )
        #expect(token.description == "ProviderToken(kid ABC123DEFG, iss DEF123GHIJ, iat 1700000000)")
    }

    @Test func signingInputIsExactlyApplesHeaderAndClaims() throws {
        let input = try ProviderToken.signingInput(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: 1_700_000_000)
        let parts = String(decoding: input, as: UTF8.self).split(separator: ".").map(String.init)
        #expect(parts.count == 2)
        #expect(
            String(decoding: try Base64URL.decode(parts[0]), as: UTF8.self) == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        #expect(
            String(decoding: try Base64URL.decode(parts[1]), as: UTF8.self) == #"{"iss":"DEF123GHIJ","iat":1700000000}"#
        )
        #expect(
            String(
                decoding: try ProviderToken.signingInput(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: 0),
                as: UTF8.self
            )
            .hasSuffix(Base64URL.encode(Array(#"{"iss":"DEF123GHIJ","iat":0}"#.utf8))))
    }

    @Test(arguments: [
        (
            "abc123defg", "team",
            "key id \"abc123defg\" has characters other than A-Z and 0-9, expected 10 characters A-Z and 0-9 (the KEYID in AuthKey_<KEYID>.p8)"
        ),
        (
            "ABC123", "team",
            "key id \"ABC123\" has 6 characters, expected 10 characters A-Z and 0-9 (the KEYID in AuthKey_<KEYID>.p8)"
        ),
        (
            "ABC123DEFG", "",
            "team id \"\" has 0 characters, expected 10 characters A-Z and 0-9 (shown in the developer account's membership details)"
        ),
        (
            "ABC123DEFG", "DEF123GHI\"",
            "team id \"DEF123GHI\"\" has characters other than A-Z and 0-9, expected 10 characters A-Z and 0-9 (shown in the developer account's membership details)"
        ),
    ])
    func signingInputRefusesIdentifiersOfTheWrongShape(keyID: String, teamID: String, reason: String) {
        #expect(throws: LegacyAPNsError(.invalidValue, reason)) {
            try ProviderToken.signingInput(keyID: keyID, teamID: teamID == "team" ? "DEF123GHIJ" : teamID, issuedAt: 1)
        }
    }

    @Test func signingInputRefusesNegativeTimes() {
        #expect(throws: LegacyAPNsError(.invalidValue, "issued-at time -1 is negative, expected UNIX seconds")) {
            try ProviderToken.signingInput(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: -1)
        }
    }

    @Test func acceptsTypJWTReorderedMembersWhiteSpaceAndExtraClaims() throws {
        let token = try ProviderToken(
            compactSerialization: Self.compact(
                #" { "typ" : "JWT", "kid":"ABC123DEFG" ,"alg":"ES256"} "#,
                #"{"iat":0,"aud":"ignored","iss":"DEF123GHIJ"}"#))
        #expect(token.keyID == "ABC123DEFG")
        #expect(token.issuedAt == 0)
        let escaped = try ProviderToken(compactSerialization: Self.compact(#"{"alg":"ES256","\u006bid":"ABC123DEFG"}"#))
        #expect(escaped.keyID == "ABC123DEFG")
    }

    static let refused: [(String, ProviderToken.Failure)] = [
        ("", .missing),
        ("abc", .malformed("expected 3 base64url parts separated by '.', found 1")),
        ("a.b", .malformed("expected 3 base64url parts separated by '.', found 2")),
        (
            "a.b.c.d.e",
            .malformed("expected 3 base64url parts separated by '.', found 5 (an encrypted JWE, not a signed JWS)")
        ),
        (
            compact() + "=",
            .malformed("the signature is not base64url: '=' padding at offset 86 (base64url here has no padding)")
        ),
        (
            "eyJ+." + compact().split(separator: ".", maxSplits: 1)[1],
            .malformed("the header is not base64url: '+' at offset 3 is not a base64url character (A-Z a-z 0-9 - _)")
        ),
        (
            compact("[1]"),
            .malformed("the header is not a JSON object: unexpected '[', expected a JSON object at offset 0")
        ),
        (
            compact(#"{"alg":"ES256","kid":"ABC123DEFG""#),
            .malformed("the header is not a JSON object: unexpected end of JSON in an object at offset 33")
        ),
        (compact(#"{"alg":"ES256","alg":"ES256","kid":"ABC123DEFG"}"#), .malformed(#"the header has "alg" twice"#)),
        (
            compact(#"{"alg":"ES256","kid":"ABC123DEFG"}"#, #"{"iss":"DEF123GHIJ","iat":1,"iat":2}"#),
            .malformed(#"the claims have "iat" twice"#)
        ),
        (compact(#"{"kid":"ABC123DEFG"}"#), .missingAlgorithm),
        (compact(#"{"alg":"none","kid":"ABC123DEFG"}"#, signature: []), .unsupportedAlgorithm("none")),
        (
            compact(#"{"alg":"HS256","kid":"ABC123DEFG"}"#, signature: Array(repeating: 1, count: 32)),
            .unsupportedAlgorithm("HS256")
        ),
        (
            compact(#"{"alg":"RS256","kid":"ABC123DEFG"}"#, signature: Array(repeating: 1, count: 256)),
            .unsupportedAlgorithm("RS256")
        ),
        (compact(#"{"alg":"es256","kid":"ABC123DEFG"}"#), .unsupportedAlgorithm("es256")),
        (compact(#"{"alg":["ES256"],"kid":"ABC123DEFG"}"#), .unsupportedAlgorithm(#"["ES256"]"#)),
        (
            compact(#"{"alg":"ES256","kid":"ABC123DEFG","jku":"https://example.com/keys"}"#),
            .unexpectedHeaderParameter("jku")
        ),
        (compact(#"{"alg":"ES256","kid":"ABC123DEFG","typ":"JOSE"}"#), .unsupportedType(#""JOSE""#)),
        (compact(#"{"alg":"ES256","kid":"ABC123DEFG","typ":null}"#), .unsupportedType("null")),
        (compact(#"{"alg":"ES256"}"#), .missingKeyID),
        (compact(#"{"alg":"ES256","kid":"abc123defg"}"#), .invalidKeyID(#""abc123defg""#)),
        (compact(#"{"alg":"ES256","kid":1234567890}"#), .invalidKeyID("1234567890")),
        (compact(#"{"alg":"ES256","kid":"ABC123DEFG"}"#, #"{"iat":1700000000}"#), .missingIssuer),
        (
            compact(#"{"alg":"ES256","kid":"ABC123DEFG"}"#, #"{"iss":"TEAM","iat":1700000000}"#),
            .invalidIssuer(#""TEAM""#)
        ),
        (compact(#"{"alg":"ES256","kid":"ABC123DEFG"}"#, #"{"iss":"DEF123GHIJ"}"#), .missingIssuedAt),
        (
            compact(#"{"alg":"ES256","kid":"ABC123DEFG"}"#, #"{"iss":"DEF123GHIJ","iat":"1700000000"}"#),
            .invalidIssuedAt(#""1700000000""#)
        ),
        (
            compact(#"{"alg":"ES256","kid":"ABC123DEFG"}"#, #"{"iss":"DEF123GHIJ","iat":1700000000.5}"#),
            .invalidIssuedAt("1700000000.5")
        ),
        (
            compact(#"{"alg":"ES256","kid":"ABC123DEFG"}"#, #"{"iss":"DEF123GHIJ","iat":1.7e9}"#),
            .invalidIssuedAt("1.7e9")
        ),
        (compact(#"{"alg":"ES256","kid":"ABC123DEFG"}"#, #"{"iss":"DEF123GHIJ","iat":-1}"#), .invalidIssuedAt("-1")),
        (
            compact(#"{"alg":"ES256","kid":"ABC123DEFG"}"#, #"{"iss":"DEF123GHIJ","iat":99999999999999999999}"#),
            .invalidIssuedAt("99999999999999999999")
        ),
        (compact(signature: Array(repeating: 1, count: 71)), .invalidSignatureLength(71)),
        (compact(signature: []), .invalidSignatureLength(0)),
    ]

    @Test(arguments: refused)
    func refusesWithThePreciseFailure(text: String, failure: ProviderToken.Failure) {
        #expect(throws: failure) { try ProviderToken(compactSerialization: text) }
    }

    @Test func readsTheAuthorizationHeader() throws {
        let text = Self.compact()
        for value in ["bearer " + text, "Bearer " + text, "BEARER  " + text + " "] {
            #expect(try ProviderToken(authorizationHeaderValue: value).compactSerialization == text)
        }
        for value in ["", "   ", "bearer", "bearer   "] {
            #expect(throws: ProviderToken.Failure.missing) { try ProviderToken(authorizationHeaderValue: value) }
        }
        for value in [text, "basic " + text, "bearer" + text] {
            #expect(throws: ProviderToken.Failure.malformed("the authorization header does not start with \"bearer \""))
            {
                try ProviderToken(authorizationHeaderValue: value)
            }
        }
    }

    @Test func failureTextsNameThePartAndWhatAPNsExpects() {
        #expect(
            ProviderToken.Failure.unsupportedAlgorithm("HS256").description
                == "provider token is signed with HS256, APNs accepts only ES256")
        #expect(
            ProviderToken.Failure.invalidSignatureLength(71).description
                == "provider token signature has 71 bytes (DER?), ES256 needs the 64-byte r ‖ s")
        #expect(ProviderToken.Failure.missing.description == "no provider token (expected \"bearer <JWT>\")")
        #expect(
            ProviderToken.Failure.invalidIssuedAt(#""1700000000""#).description
                == #"provider token "iat" "1700000000" is not a whole, non-negative number of UNIX seconds"#)
    }

    @Test func hostileValuesAreCutInFailures() {
        let long = String(repeating: "X", count: 500)
        #expect(throws: ProviderToken.Failure.unsupportedAlgorithm(String(repeating: "X", count: 40) + "...")) {
            try ProviderToken(compactSerialization: Self.compact(#"{"alg":"\#(long)","kid":"ABC123DEFG"}"#))
        }
    }

    @Test(arguments: [
        ("ABC123DEFG", true), ("0000000000", true), ("ABC123DEF", false), ("ABC123DEFGH", false), ("abc123defg", false),
        ("ABC123DEF-", false), ("ÀBC123DEFG", false),
    ])
    func identifiersAreTenUppercaseLettersOrDigits(identifier: String, valid: Bool) {
        #expect(ProviderToken.isValidIdentifier(identifier) == valid)
    }
}
