import Foundation
import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs

/// Signing and verifying provider tokens with real keys, checked against PyJWT in both directions.
@Suite struct ProviderTokenSigningTests {
    static let keyPath = Fixtures.certs("AuthKey_ABC123DEFG.p8")
    static let publicKeyPath = Fixtures.certs("AuthKey_ABC123DEFG.pub.pem")
    static let otherKeyPath = Fixtures.certs("AuthKey_ZYX987WVUT.p8")

    let key = try! SigningKey(pemRepresentation: Fixtures.bytes(keyPath))
    let publicKey = try! SigningKey.PublicKey(pemRepresentation: Fixtures.bytes(publicKeyPath))
    let otherKey = try! SigningKey(pemRepresentation: Fixtures.bytes(otherKeyPath))

    static let keyID = "ABC123DEFG"
    static let teamID = "DEF123GHIJ"
    /// A time in the past (PyJWT refuses an `iat` in the future).
    static let issuedAt: Int64 = 1_700_000_000

    func sign(issuedAt: Int64 = issuedAt) throws -> ProviderToken {
        try key.signProviderToken(keyID: Self.keyID, teamID: Self.teamID, issuedAt: issuedAt)
    }

    /// The decoded JSON text of a token's first or second part.
    static func part(_ compact: String, _ index: Int) throws -> String {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        return String(decoding: try Base64URL.decode(String(parts[index])), as: UTF8.self)
    }

    /// `compact` with its signature part replaced by `signature`.
    static func replacingSignature(of compact: String, with signature: [UInt8]) -> String {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        return parts[0] + "." + parts[1] + "." + Base64URL.encode(signature)
    }

    @Test func signedTokensHaveApplesExactHeaderClaimsAndA64ByteSignature() throws {
        let token = try sign()
        #expect(try Self.part(token.compactSerialization, 0) == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        #expect(try Self.part(token.compactSerialization, 1) == #"{"iss":"DEF123GHIJ","iat":1700000000}"#)
        #expect(token.signature.count == 64)
        #expect(token.keyID == Self.keyID)
        #expect(token.teamID == Self.teamID)
        #expect(token.issuedAt == Self.issuedAt)
        #expect(token.authorizationHeaderValue == "bearer " + token.compactSerialization)
        #expect(!token.compactSerialization.contains("="))

        let parsed = try ProviderToken(compactSerialization: token.compactSerialization)
        #expect(parsed == token)
        try publicKey.verify(parsed)
        try key.publicKey.verify(parsed)
        #expect(publicKey.isValidSignature(for: parsed))
    }

    @Test func pyJWTAcceptsOurTokens() throws {
        let now = Int64(Date().timeIntervalSince1970) - 5
        let tokens = try [sign(), sign(issuedAt: now), sign(issuedAt: 0)]
        for keyPath in [Self.publicKeyPath, Self.keyPath] {
            let verdicts = try PyJWTJudge.decode(tokens.map(\.compactSerialization), keyPath: keyPath)
            for (token, verdict) in zip(tokens, verdicts) {
                #expect(verdict.accepted, "PyJWT refused \(token): \(verdict.error ?? "")")
                #expect(verdict.header.count == 2)
                #expect(verdict.header["alg"] as? String == "ES256")
                #expect(verdict.header["kid"] as? String == Self.keyID)
                #expect(verdict.claims.count == 2)
                #expect(verdict.claims["iss"] as? String == Self.teamID)
                #expect((verdict.claims["iat"] as? NSNumber)?.int64Value == token.issuedAt)
            }
        }
    }

    @Test func weAcceptPyJWTTokens() throws {
        let tokens = try PyJWTJudge.encode([
            [
                "claims": ["iss": Self.teamID, "iat": Self.issuedAt], "key": Self.keyPath, "alg": "ES256",
                "headers": ["kid": Self.keyID],
            ],
            [
                // Without the typ PyJWT adds by default, and with claims in the other order.
                "claims": ["iat": 1_234_567_890, "iss": Self.teamID], "key": Self.keyPath, "alg": "ES256",
                "headers": ["kid": Self.keyID, "typ": NSNull()],
            ],
        ])
        #expect(try Self.part(tokens[0], 0).contains(#""typ":"JWT""#))
        for (compact, issuedAt) in zip(tokens, [Self.issuedAt, 1_234_567_890]) {
            let token = try ProviderToken(compactSerialization: compact)
            #expect(token.keyID == Self.keyID)
            #expect(token.teamID == Self.teamID)
            #expect(token.issuedAt == issuedAt)
            try publicKey.verify(token)
            try key.publicKey.verify(token)
            #expect(throws: ProviderToken.Failure.badSignature) { try otherKey.publicKey.verify(token) }
        }
    }

    @Test func derSignaturesAreRefusedByUsAndByPyJWT() throws {
        let token = try sign()
        let der = try #require(ECDSASignature.der(fromRaw: token.signature))
        #expect((68...72).contains(der.count))
        // What a naive signer sends: EVP_DigestSign's DER output as the JWS signature.
        let naive = Self.replacingSignature(of: token.compactSerialization, with: der)
        #expect(throws: ProviderToken.Failure.invalidSignatureLength(der.count)) {
            try ProviderToken(compactSerialization: naive)
        }
        let verdicts = try PyJWTJudge.decode([naive, token.compactSerialization], keyPath: Self.publicKeyPath)
        #expect(!verdicts[0].accepted)
        #expect(verdicts[0].error == "InvalidSignatureError")
        #expect(verdicts[1].accepted)
    }

    @Test func tamperedTokensAndOtherKeysFailWithBadSignature() throws {
        let token = try sign()
        let parts = token.compactSerialization.split(separator: ".").map(String.init)

        // The claims of another time under the original signature.
        let otherClaims = Base64URL.encode(Array(#"{"iss":"DEF123GHIJ","iat":1700000001}"#.utf8))
        let otherHeader = Base64URL.encode(Array(#"{"alg":"ES256","kid":"ZYX987WVUT"}"#.utf8))
        var flipped = token.signature
        flipped[40] ^= 0x01
        let tampered = [
            parts[0] + "." + otherClaims + "." + parts[2],
            otherHeader + "." + parts[1] + "." + parts[2],
            Self.replacingSignature(of: token.compactSerialization, with: flipped),
            Self.replacingSignature(of: token.compactSerialization, with: [UInt8](repeating: 0, count: 64)),
            Self.replacingSignature(of: token.compactSerialization, with: [UInt8](repeating: 0xFF, count: 64)),
        ]
        for compact in tampered {
            let parsed = try ProviderToken(compactSerialization: compact)
            #expect(throws: ProviderToken.Failure.badSignature) { try publicKey.verify(parsed) }
        }
        #expect(throws: ProviderToken.Failure.badSignature) { try otherKey.publicKey.verify(token) }
        let verdicts = try PyJWTJudge.decode(tampered, keyPath: Self.publicKeyPath)
        #expect(verdicts.allSatisfy { $0.error == "InvalidSignatureError" }, "\(verdicts.map(\.error))")
    }

    @Test func pyJWTTokensOfOtherAlgorithmsOrShapesAreRefused() throws {
        let claims: [String: Any] = ["iss": Self.teamID, "iat": Self.issuedAt]
        let kid: [String: Any] = ["kid": Self.keyID]
        let tokens = try PyJWTJudge.encode([
            ["claims": claims, "alg": "none", "headers": kid],
            ["claims": claims, "secret": String(repeating: "s", count: 32), "alg": "HS256", "headers": kid],
            ["claims": claims, "key": Fixtures.certs("p8-rsa.p8"), "alg": "RS256", "headers": kid],
            ["claims": claims, "key": Fixtures.certs("p8-p384.p8"), "alg": "ES384", "headers": kid],
            ["claims": claims, "key": Self.keyPath, "alg": "ES256"],
            [
                "claims": ["iss": Self.teamID, "iat": "1700000000"], "key": Self.keyPath, "alg": "ES256",
                "headers": kid,
            ],
            [
                "claims": ["iss": Self.teamID, "iat": 1_700_000_000.5], "key": Self.keyPath, "alg": "ES256",
                "headers": kid,
            ],
            ["claims": ["iss": Self.teamID, "iat": -1], "key": Self.keyPath, "alg": "ES256", "headers": kid],
            ["claims": ["iat": Self.issuedAt], "key": Self.keyPath, "alg": "ES256", "headers": kid],
            ["claims": ["iss": Self.teamID], "key": Self.keyPath, "alg": "ES256", "headers": kid],
        ])
        let expected: [ProviderToken.Failure] = [
            .unsupportedAlgorithm("none"), .unsupportedAlgorithm("HS256"), .unsupportedAlgorithm("RS256"),
            .unsupportedAlgorithm("ES384"), .missingKeyID, .invalidIssuedAt(#""1700000000""#),
            .invalidIssuedAt("1700000000.5"), .invalidIssuedAt("-1"), .missingIssuer, .missingIssuedAt,
        ]
        for (compact, failure) in zip(tokens, expected) {
            #expect(throws: failure) { try ProviderToken(compactSerialization: compact) }
        }
    }

    @Test func signaturesWithLeadingZeroBytesRoundTrip() throws {
        // r or s below 2^248 happens once in 256 signatures each: sign until both have shown up.
        var leadingZeroR: ProviderToken?
        var leadingZeroS: ProviderToken?
        for _ in 0..<20_000 where leadingZeroR == nil || leadingZeroS == nil {
            let token = try sign()
            try publicKey.verify(try ProviderToken(compactSerialization: token.compactSerialization))
            if token.signature[0] == 0, leadingZeroR == nil { leadingZeroR = token }
            if token.signature[32] == 0, leadingZeroS == nil { leadingZeroS = token }
        }
        let tokens = [try #require(leadingZeroR), try #require(leadingZeroS)]
        for token in tokens {
            let der = try #require(ECDSASignature.der(fromRaw: token.signature))
            #expect(ECDSASignature.raw(fromDER: der) == token.signature)
        }
        let verdicts = try PyJWTJudge.decode(tokens.map(\.compactSerialization), keyPath: Self.publicKeyPath)
        #expect(verdicts.allSatisfy { $0.accepted }, "\(verdicts.map(\.error))")
    }

    @Test func derAndRawSignaturesConvertWithPaddingBothWays() throws {
        // r = 1 (one byte in DER), s = 0x80 followed by 31 bytes 0x11 (needs a 00 in DER).
        let s = [0x80] + [UInt8](repeating: 0x11, count: 31)
        let der: [UInt8] = [0x30, 0x26, 0x02, 0x01, 0x01, 0x02, 0x21, 0x00] + s
        let raw = [UInt8](repeating: 0, count: 31) + [0x01] + s
        #expect(ECDSASignature.raw(fromDER: der) == raw)
        #expect(ECDSASignature.der(fromRaw: raw) == der)
        #expect(ECDSASignature.raw(fromDER: der + [0]) == nil)  // trailing bytes
        #expect(ECDSASignature.raw(fromDER: Array(der.dropLast())) == nil)  // truncated
        #expect(ECDSASignature.der(fromRaw: Array(raw.dropLast())) == nil)
    }

    @Test func signingRefusesIdentifiersOfTheWrongShape() {
        #expect(throws: LegacyAPNsError.self) {
            try key.signProviderToken(keyID: "ABC123", teamID: Self.teamID, issuedAt: Self.issuedAt)
        }
        do {
            _ = try key.signProviderToken(keyID: Self.keyID, teamID: "def123ghij", issuedAt: Self.issuedAt)
            Issue.record("signed with a lowercase team id")
        } catch let error as LegacyAPNsError {
            #expect(error.code == .invalidValue)
            #expect(error.reason.hasPrefix(#"team id "def123ghij" has characters other than A-Z and 0-9"#))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func oneKeyVerifiesFromManyTasksAtOnce() async throws {
        let token = try sign()
        let publicKey = self.publicKey
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask { (0..<50).allSatisfy { _ in publicKey.isValidSignature(for: token) } }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == Array(repeating: true, count: 8))
    }
}
