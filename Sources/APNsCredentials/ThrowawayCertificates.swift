import APNsCore
internal import COpenSSL

/// A throwaway test PKI made on the spot with OpenSSL, for tools that must work without the
/// repository's `Fixtures/certs` (a `legacy-push` binary copied elsewhere): a root CA, a gateway
/// certificate for `localhost`, 127.0.0.1 and ::1, and a provider certificate shaped like Apple's
/// universal push certificates (subject `UID=com.example.legacy`,
/// `CN=Apple Push Services: com.example.legacy`, `OU=TEAM123456`, the development and production
/// markers and the topics extension), each issued by the CA.
///
/// The CA and the gateway use EC P-256 keys (fast to make); the provider certificate an RSA
/// 2048-bit key, as Apple's have. Nothing here is a secret worth keeping: the keys exist to be
/// thrown away with the folder they were written to.
package struct ThrowawayCertificates: Sendable {
    /// The bundle id (topic) of the provider certificate.
    package static let bundleID = "com.example.legacy"
    /// The team id (OU) of the provider certificate.
    package static let teamID = "TEAM123456"

    /// The self-signed root.
    package let certificateAuthority: Certificate
    /// The gateway's identity (its chain is empty: clients trust the root directly).
    package let server: ClientIdentity
    /// The provider (client) identity.
    package let client: ClientIdentity

    /// Makes a new CA, gateway and provider certificate, valid from an hour before `now` (UNIX
    /// seconds) for `days` days.
    ///
    /// - Throws: `LegacyAPNsError` `.tlsConfiguration` naming the OpenSSL step that failed.
    package static func generate(now: Int64, days: Int = 30) throws -> ThrowawayCertificates {
        try OpenSSLLibrary.shared.withContext {
            let caKey = try generateKey(algorithm: "EC")
            let caName = [("CN", "LegacyAPNs Throwaway Test CA"), ("O", "LegacyAPNs Tests")]
            let ca = try issue(
                subject: caName, key: caKey, issuer: nil, now: now, days: days,
                extensions: [
                    (NID_basic_constraints, "critical,CA:TRUE"), (NID_key_usage, "critical,keyCertSign,cRLSign"),
                    (NID_subject_key_identifier, "hash"),
                ])

            let serverKey = try generateKey(algorithm: "EC")
            let server = try issue(
                subject: [("CN", "localhost"), ("O", "LegacyAPNs Throwaway Gateway")], key: serverKey,
                issuer: (ca, caKey), now: now, days: days,
                extensions: [
                    (NID_basic_constraints, "critical,CA:FALSE"),
                    (NID_key_usage, "critical,digitalSignature,keyEncipherment"), (NID_ext_key_usage, "serverAuth"),
                    (NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1"), (NID_subject_key_identifier, "hash"),
                    (NID_authority_key_identifier, "keyid"),
                ])

            let clientKey = try generateKey(algorithm: "RSA")
            let client = try issue(
                subject: [
                    ("UID", bundleID), ("CN", "Apple Push Services: \(bundleID)"), ("OU", teamID),
                    ("O", "Example Corp"), ("C", "US"),
                ],
                key: clientKey, issuer: (ca, caKey), now: now, days: days,
                extensions: [
                    (NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
                    (NID_ext_key_usage, "clientAuth"), (NID_subject_key_identifier, "hash"),
                    (NID_authority_key_identifier, "keyid"),
                ],
                appleExtensions: [
                    (Certificate.AppleOID.development, [0x05, 0x00]),
                    (Certificate.AppleOID.production, [0x05, 0x00]),
                    (Certificate.AppleOID.topics, topicsExtension()),
                ])

            let root = Certificate(taking: ca)
            return ThrowawayCertificates(
                certificateAuthority: root,
                server: try ClientIdentity(certificate: Certificate(taking: server), privateKey: serverKey),
                client: try ClientIdentity(
                    certificate: Certificate(taking: client), privateKey: clientKey, chain: [root]))
        }
    }

    /// A new key: EC P-256 for "EC", RSA 2048-bit for "RSA".
    private static func generateKey(algorithm: String) throws -> PrivateKey {
        guard let context = EVP_PKEY_CTX_new_from_name(OpenSSLLibrary.shared.context, algorithm, nil) else {
            throw failure("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1 else { throw failure("EVP_PKEY_keygen_init") }
        let configured =
            algorithm == "EC"
            ? EVP_PKEY_CTX_set_group_name(context, "P-256") : EVP_PKEY_CTX_set_rsa_keygen_bits(context, 2048)
        guard configured == 1 else {
            throw failure("EVP_PKEY_CTX_set_\(algorithm == "EC" ? "group_name" : "rsa_keygen_bits")")
        }
        var key: OpaquePointer? = nil
        guard EVP_PKEY_generate(context, &key) == 1, let key else { throw failure("EVP_PKEY_generate") }
        return PrivateKey(taking: key)
    }

    /// A signed X.509 v3 certificate for `key`'s public half; self-signed when `issuer` is nil.
    /// Returns the owned `X509*`.
    private static func issue(
        subject: [(String, String)], key: PrivateKey, issuer: (certificate: OpaquePointer, key: PrivateKey)?,
        now: Int64, days: Int, extensions: [(Int32, String)], appleExtensions: [(String, [UInt8])] = []
    ) throws -> OpaquePointer {
        guard let certificate = X509_new() else { throw failure("X509_new") }
        var owned = true
        defer { if owned { X509_free(certificate) } }
        guard let name = X509_NAME_new() else { throw failure("X509_NAME_new") }
        defer { X509_NAME_free(name) }
        for (field, value) in subject {
            guard X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, value, -1, -1, 0) == 1 else {
                throw failure("X509_NAME_add_entry_by_txt(\(field))")
            }
        }
        var serial = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&serial, Int32(serial.count)) == 1 else { throw failure("RAND_bytes") }
        serial[0] &= 0x7F  // positive
        serial[0] |= 0x01  // and not starting with a zero byte
        guard let serialNumber = BN_bin2bn(serial, Int32(serial.count), nil) else { throw failure("BN_bin2bn") }
        defer { BN_free(serialNumber) }
        var start = time_t(now)
        guard X509_set_version(certificate, 2) == 1,  // v3
            BN_to_ASN1_INTEGER(serialNumber, X509_get_serialNumber(certificate)) != nil,
            X509_set_subject_name(certificate, name) == 1,
            X509_set_issuer_name(certificate, issuer.map { X509_get_subject_name($0.certificate) } ?? name) == 1,
            X509_time_adj_ex(X509_getm_notBefore(certificate), 0, -3600, &start) != nil,
            X509_time_adj_ex(X509_getm_notAfter(certificate), Int32(days), 0, &start) != nil,
            X509_set_pubkey(certificate, key.pointer) == 1
        else { throw failure("X509_set_*") }

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.certificate ?? certificate, certificate, nil, nil, 0)
        for (nid, value) in extensions {
            guard let made = X509V3_EXT_nconf_nid(nil, &context, nid, value) else {
                throw failure("X509V3_EXT_nconf_nid(\(value))")
            }
            defer { X509_EXTENSION_free(made) }
            guard X509_add_ext(certificate, made, -1) == 1 else { throw failure("X509_add_ext") }
        }
        for (oid, der) in appleExtensions {
            guard let object = OBJ_txt2obj(oid, 1) else { throw failure("OBJ_txt2obj(\(oid))") }
            defer { ASN1_OBJECT_free(object) }
            guard let value = ASN1_OCTET_STRING_new() else { throw failure("ASN1_OCTET_STRING_new") }
            defer { ASN1_OCTET_STRING_free(value) }
            guard ASN1_OCTET_STRING_set(value, der, Int32(der.count)) == 1,
                let made = X509_EXTENSION_create_by_OBJ(nil, object, 0, value)
            else { throw failure("X509_EXTENSION_create_by_OBJ(\(oid))") }
            defer { X509_EXTENSION_free(made) }
            guard X509_add_ext(certificate, made, -1) == 1 else { throw failure("X509_add_ext(\(oid))") }
        }
        guard X509_sign(certificate, (issuer?.key ?? key).pointer, EVP_sha256()) > 0 else {
            throw failure("X509_sign")
        }
        owned = false
        return certificate
    }

    /// The DER of Apple's topics extension: the bundle id (kind `app`), `.voip` (`voip`) and
    /// `.complication` (`complication`), as `SEQUENCE { UTF8String, SEQUENCE { UTF8String } ... }`.
    static func topicsExtension() -> [UInt8] {
        func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
            precondition(content.count < 128)  // short-form lengths are enough here
            return [tag, UInt8(content.count)] + content
        }
        func utf8(_ text: String) -> [UInt8] { tlv(0x0C, Array(text.utf8)) }
        var topics: [UInt8] = []
        for (suffix, kind) in [("", "app"), (".voip", "voip"), (".complication", "complication")] {
            topics += utf8(bundleID + suffix) + tlv(0x30, utf8(kind))
        }
        return tlv(0x30, topics)
    }

    private static func failure(_ operation: String) -> LegacyAPNsError {
        let detail = OpenSSLError.drain(operation).shortReason.map { ": \($0)" } ?? ""
        return LegacyAPNsError(.tlsConfiguration, "could not make a throwaway test certificate (\(operation)\(detail))")
    }
}
