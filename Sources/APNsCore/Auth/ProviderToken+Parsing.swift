extension ProviderToken {
    /// Parses an `authorization` header value, `bearer <token>` (the scheme in any case, as HTTP
    /// allows), and the token as ``init(compactSerialization:)`` does.
    ///
    /// - Throws: ``Failure/missing`` for an empty value or a bare `bearer`; ``Failure/malformed(_:)``
    ///   for another scheme; otherwise what ``init(compactSerialization:)`` throws.
    public init(authorizationHeaderValue value: String) throws(Failure) {
        let utf8 = Array(value.utf8)
        var index = 0
        while index < utf8.count, utf8[index] == UInt8(ascii: " ") { index += 1 }
        guard index < utf8.count else { throw .missing }
        let scheme = Array("bearer".utf8)
        let hasScheme =
            utf8.count - index >= scheme.count
            && zip(utf8[index..<index + scheme.count], scheme).allSatisfy { $0 | 0x20 == $1 }
        guard hasScheme, utf8.count == index + scheme.count || utf8[index + scheme.count] == UInt8(ascii: " ")
        else {
            throw .malformed("the authorization header does not start with \"bearer \"")
        }
        index += scheme.count
        while index < utf8.count, utf8[index] == UInt8(ascii: " ") { index += 1 }
        var end = utf8.count
        while end > index, utf8[end - 1] == UInt8(ascii: " ") { end -= 1 }
        guard index < end else { throw .missing }
        try self.init(compactSerialization: String(decoding: utf8[index..<end], as: UTF8.self))
    }

    /// Parses a compact JWS and checks that it is an APNs provider token: header exactly
    /// `{"alg":"ES256","kid":"<key id>"}` (a `typ` of `JWT` is allowed), claims with `iss` (a team
    /// id) and `iat` (whole seconds), and a 64-byte signature. Further claims are ignored
    /// (RFC 7519 §4); repeated names are refused.
    ///
    /// The signature is *not* verified here: look up the key by ``keyID`` and call
    /// `SigningKey.PublicKey.verify(_:)`.
    ///
    /// - Throws: the first ``Failure`` found, checking the structure, then the header (`alg`
    ///   first), the claims and the signature's length.
    public init(compactSerialization: String) throws(Failure) {
        var text = compactSerialization
        // withUTF8 rethrows untyped errors, so the typed failure travels out in a Result.
        let parts = try text.withUTF8 { utf8 in
            Result { () throws(Failure) in try Self.parse(UnsafeRawBufferPointer(utf8)) }
        }.get()
        self.keyID = parts.keyID
        self.teamID = parts.teamID
        self.issuedAt = parts.issuedAt
        self.compactSerialization = compactSerialization
        self.signature = parts.signature
        self.signingInputCount = parts.signingInputCount
    }

    private struct Parts {
        var keyID: String
        var teamID: String
        var issuedAt: Int64
        var signature: [UInt8]
        var signingInputCount: Int
    }

    private static func parse(_ token: UnsafeRawBufferPointer) throws(Failure) -> Parts {
        guard !token.isEmpty else { throw .missing }
        var dots: [Int] = []
        for index in 0..<token.count where token[index] == UInt8(ascii: ".") {
            dots.append(index)
            if dots.count > 4 { break }
        }
        guard dots.count == 2 else {
            let found = dots.count > 4 ? "more than 5" : "\(dots.count + 1)"
            let hint = dots.count == 4 ? " (an encrypted JWE, not a signed JWS)" : ""
            throw .malformed("expected 3 base64url parts separated by '.', found \(found)\(hint)")
        }
        let header = try decode(token, 0..<dots[0], part: "header")
        let claims = try decode(token, dots[0] + 1..<dots[1], part: "claims")
        let signature = try decode(token, dots[1] + 1..<token.count, part: "signature")
        let keyID = try header.withUnsafeBytes { bytes in
            Result { () throws(Failure) in try checkHeader(bytes) }
        }.get()
        let (teamID, issuedAt) = try claims.withUnsafeBytes { bytes in
            Result { () throws(Failure) in try checkClaims(bytes) }
        }.get()
        guard signature.count == 64 else { throw .invalidSignatureLength(signature.count) }
        return Parts(
            keyID: keyID, teamID: teamID, issuedAt: issuedAt, signature: signature, signingInputCount: dots[1])
    }

    private static func decode(_ token: UnsafeRawBufferPointer, _ range: Range<Int>, part: String) throws(Failure)
        -> [UInt8]
    {
        do throws(Base64URL.Failure) {
            return try Base64URL.decode(UnsafeRawBufferPointer(rebasing: token[range]))
        } catch {
            throw .malformed("the \(part) \(part == "claims" ? "are" : "is") not base64url: \(error)")
        }
    }

    /// The JSON object's members by name, refusing repeated names.
    private static func members(_ bytes: UnsafeRawBufferPointer, part: String) throws(Failure) -> [String: Range<Int>] {
        let list: [JSONScanner.Member]
        do throws(JSONScanner.Failure) {
            list = try JSONScanner.objectMembers(bytes)
        } catch {
            let verb = part == "claims" ? "are" : "is"
            throw .malformed("the \(part) \(verb) not a JSON object: \(error.message) at offset \(error.offset)")
        }
        var members: [String: Range<Int>] = [:]
        for member in list {
            guard members.updateValue(member.value, forKey: member.key) == nil else {
                throw .malformed("the \(part) \(part == "claims" ? "have" : "has") \"\(clip(member.key))\" twice")
            }
        }
        return members
    }

    private static func checkHeader(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> String {
        let members = try members(bytes, part: "header")
        guard let algorithm = members["alg"] else { throw .missingAlgorithm }
        guard let name = JSONScanner.stringValue(bytes, in: algorithm) else {
            throw .unsupportedAlgorithm(JSONScanner.excerpt(bytes, in: algorithm))
        }
        guard name == "ES256" else { throw .unsupportedAlgorithm(clip(name)) }
        if let unexpected = members.keys.filter({ !["alg", "kid", "typ"].contains($0) }).min() {
            throw .unexpectedHeaderParameter(clip(unexpected))
        }
        if let type = members["typ"], JSONScanner.stringValue(bytes, in: type) != "JWT" {
            throw .unsupportedType(JSONScanner.excerpt(bytes, in: type))
        }
        guard let keyID = members["kid"] else { throw .missingKeyID }
        guard let value = JSONScanner.stringValue(bytes, in: keyID), isValidIdentifier(value) else {
            throw .invalidKeyID(JSONScanner.excerpt(bytes, in: keyID))
        }
        return value
    }

    private static func checkClaims(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> (String, Int64) {
        let members = try members(bytes, part: "claims")
        guard let issuer = members["iss"] else { throw .missingIssuer }
        guard let teamID = JSONScanner.stringValue(bytes, in: issuer), isValidIdentifier(teamID) else {
            throw .invalidIssuer(JSONScanner.excerpt(bytes, in: issuer))
        }
        guard let issuedAt = members["iat"] else { throw .missingIssuedAt }
        guard let seconds = JSONScanner.unsignedIntegerValue(bytes, in: issuedAt) else {
            throw .invalidIssuedAt(JSONScanner.excerpt(bytes, in: issuedAt))
        }
        return (teamID, seconds)
    }

    /// Untrusted text, cut to 40 characters for messages.
    private static func clip(_ text: String) -> String {
        text.count <= 40 ? text : String(text.prefix(40)) + "..."
    }
}
