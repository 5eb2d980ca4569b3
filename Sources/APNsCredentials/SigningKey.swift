import APNsCore
internal import COpenSSL

/// An APNs token-signing key: the EC P-256 private key that Apple's developer portal lets you
/// download once, as `AuthKey_<KEYID>.p8` (unencrypted PKCS#8 PEM, `-----BEGIN PRIVATE KEY-----`).
/// It signs the `ProviderToken`s of token-based connections; its ``publicKey`` verifies them.
///
/// Anything else is refused with one `LegacyAPNsError` that names the problem: an RSA, Ed25519
/// or other non-P-256 key, an encrypted key, a certificate or a public key where the private key
/// belongs, damaged PEM, empty input.
///
/// ```swift
/// let key = try SigningKey(pemRepresentation: Array(p8Text.utf8))
/// let keyID = SigningKey.keyID(fromFileName: "AuthKey_ABC123DEFG.p8")  // "ABC123DEFG"
/// print(key.curve, key.fingerprint)  // "P-256", 64 lowercase hex digits
/// ```
public struct SigningKey: Sendable, CustomStringConvertible {
    /// The private key (EC P-256).
    public let privateKey: PrivateKey
    /// The public half: what a server needs to verify this key's tokens.
    public let publicKey: PublicKey

    /// Reads an APNs signing key from PEM text: PKCS#8 (`BEGIN PRIVATE KEY`, Apple's `.p8`) or
    /// the traditional SEC1 form (`BEGIN EC PRIVATE KEY`) of an EC P-256 key.
    ///
    /// - Throws: `LegacyAPNsError` `.unsupportedKey` for a key of another algorithm or curve and
    ///   for an encrypted key; `.missingCredentials` for empty input, a certificate or a public key
    ///   instead of the private key; `.corruptCredentials` for damaged or non-PEM bytes.
    public init(pemRepresentation: [UInt8]) throws {
        let labels = Self.pemLabels(pemRepresentation)
        if labels.contains("ENCRYPTED PRIVATE KEY") { throw Self.encryptedKeyError }
        guard labels.contains(where: { $0.hasSuffix("PRIVATE KEY") }) else {
            throw Self.noPrivateKeyError(pemRepresentation, labels: labels)
        }
        let key: PrivateKey
        do {
            key = try PrivateKey(pemRepresentation: pemRepresentation, passphrase: nil)
        } catch let error as LegacyAPNsError where error.code == .wrongPassphrase {
            // A traditional block with "Proc-Type: 4,ENCRYPTED".
            throw Self.encryptedKeyError
        } catch let error as LegacyAPNsError where error.code == .corruptCredentials {
            throw LegacyAPNsError(
                .corruptCredentials,
                "\(error.reason); use an intact copy of the .p8 (Apple offers its download only once)")
        }
        try Self.requireP256(key.pointer)
        self.privateKey = key
        self.publicKey = PublicKey(publicHalfOf: key.pointer)
    }

    /// The private key as unencrypted PKCS#8 DER (the base64 body of a `.p8` file, decoded).
    public var derRepresentation: [UInt8] { privateKey.derRepresentation }

    /// The private key as unencrypted PKCS#8 PEM, the `.p8` format. Handle with care: this is the
    /// secret in the clear.
    public var pemRepresentation: String { privateKey.pemRepresentation }

    /// The public key as a DER `SubjectPublicKeyInfo` (what `openssl pkey -pubout -outform DER`
    /// writes).
    public var publicKeyDERRepresentation: [UInt8] { publicKey.derRepresentation }

    /// The curve's NIST name: always "P-256" for a loaded signing key.
    public var curve: String { publicKey.curve }

    /// SHA-256 of ``publicKeyDERRepresentation`` as 64 lowercase hex digits: what
    /// `openssl pkey -in AuthKey_KEYID.p8 -pubout -outform DER | sha256sum` prints. It identifies
    /// the key without revealing it, and is the same for the `.p8` and its public key.
    public var fingerprint: String { publicKey.fingerprint }

    /// "SigningKey(EC P-256, SHA-256 <fingerprint>)": never the key material.
    public var description: String { "SigningKey(EC \(curve), SHA-256 \(fingerprint))" }

    /// The key id in the name Apple gives the download, `AuthKey_<KEYID>.p8` (KEYID: 10
    /// characters A-Z 0-9); nil for any other name. A directory part is ignored.
    ///
    /// ```swift
    /// SigningKey.keyID(fromFileName: "keys/AuthKey_ABC123DEFG.p8")  // "ABC123DEFG"
    /// SigningKey.keyID(fromFileName: "AuthKey_abc123defg.p8")       // nil
    /// ```
    public static func keyID(fromFileName fileName: String) -> String? {
        let name = fileName.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        let prefix = "AuthKey_"
        let suffix = ".p8"
        guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return nil }
        let keyID = name.dropFirst(prefix.count).dropLast(suffix.count)
        guard ProviderToken.isValidIdentifier(keyID) else { return nil }
        return String(keyID)
    }

    // MARK: Checks

    static let p256Group = "prime256v1"
    static let requirement = "APNs signing keys are EC P-256 (.p8 from the developer portal)"

    static let encryptedKeyError = LegacyAPNsError(
        .unsupportedKey,
        "the key is encrypted; Apple's .p8 keys are not encrypted (decrypt it with: openssl pkey -in KEY -out AuthKey_<KEYID>.p8)"
    )

    /// The error for PEM text without a private key block: say what is there instead.
    static func noPrivateKeyError(_ pem: [UInt8], labels: [String]) -> LegacyAPNsError {
        if pem.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            return LegacyAPNsError(
                .missingCredentials, "empty input, expected an APNs signing key (-----BEGIN PRIVATE KEY-----)")
        }
        if labels.contains(where: { $0.hasSuffix("CERTIFICATE") }) {
            return LegacyAPNsError(
                .missingCredentials,
                "this is a certificate, not a signing key; token authentication signs with the .p8 key from the developer portal"
            )
        }
        if labels.contains("PUBLIC KEY") {
            return LegacyAPNsError(
                .missingCredentials,
                "this is a public key; signing needs the private .p8 key (a public key only verifies)")
        }
        if labels.isEmpty {
            return LegacyAPNsError(
                .corruptCredentials,
                "not a PEM signing key (an AuthKey_<KEYID>.p8 file starts with -----BEGIN PRIVATE KEY-----)")
        }
        let found = labels.map { "\"\($0)\"" }.joined(separator: ", ")
        return LegacyAPNsError(
            .missingCredentials, "no private key in the PEM data (found \(found)), expected -----BEGIN PRIVATE KEY-----"
        )
    }

    /// Refuses every key but EC P-256, naming what it is instead.
    static func requireP256(_ key: OpaquePointer) throws {
        guard EVP_PKEY_is_a(key, "EC") == 1 else {
            let kind: String
            if EVP_PKEY_is_a(key, "RSA") == 1 || EVP_PKEY_is_a(key, "RSA-PSS") == 1 {
                kind = "an RSA key"
            } else if EVP_PKEY_is_a(key, "ED25519") == 1 {
                kind = "an Ed25519 key"
            } else if EVP_PKEY_is_a(key, "ED448") == 1 {
                kind = "an Ed448 key"
            } else {
                kind = "a \(EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "non-EC") key"
            }
            ERR_clear_error()
            throw LegacyAPNsError(.unsupportedKey, "the key is \(kind); \(requirement)")
        }
        guard let group = groupName(key) else {
            throw LegacyAPNsError(.unsupportedKey, "the key is an EC key without a named curve; \(requirement)")
        }
        guard group == p256Group else {
            throw LegacyAPNsError(.unsupportedKey, "the key is on curve \(curveName(group)); \(requirement)")
        }
    }

    /// OpenSSL's name for an EC key's group ("prime256v1"), nil when it has none.
    static func groupName(_ key: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 80)
        var length = 0
        guard
            EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, &buffer, buffer.count, &length) == 1
        else {
            ERR_clear_error()
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// "P-384 (secp384r1)" for a NIST curve, else OpenSSL's group name.
    static func curveName(_ group: String) -> String {
        guard let nist = EC_curve_nid2nist(OBJ_txt2nid(group)) else { return group }
        let name = String(cString: nist)
        return name == group ? name : "\(name) (\(group))"
    }

    /// The labels of the `-----BEGIN <label>-----` lines in PEM text, in order. A plain text scan,
    /// so it also sees blocks whose body is damaged.
    package static func pemLabels(_ pem: [UInt8]) -> [String] {
        let begin = Array("-----BEGIN ".utf8)
        let dashes = Array("-----".utf8)
        var labels: [String] = []
        var lineStart = 0
        while lineStart < pem.count {
            var lineEnd = lineStart
            while lineEnd < pem.count, pem[lineEnd] != 0x0A { lineEnd += 1 }
            var line = pem[lineStart..<lineEnd]
            while let last = line.last, last == 0x0D || last == 0x20 { line = line.dropLast() }
            if line.starts(with: begin), line.count >= begin.count + dashes.count,
                line.suffix(dashes.count).elementsEqual(dashes)
            {
                labels.append(String(decoding: line.dropFirst(begin.count).dropLast(dashes.count), as: UTF8.self))
            }
            lineStart = lineEnd + 1
        }
        return labels
    }
}
