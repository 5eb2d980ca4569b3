import APNsCore
internal import COpenSSL

/// An X.509 certificate: a provider (client) certificate, a server certificate or a CA.
///
/// Immutable. Parse one from PEM or DER bytes; read its names, validity, fingerprints and key;
/// An extension adds the fields of Apple's push certificates (topic, topics, environment).
///
/// ```swift
/// let certificate = try Certificate(pemRepresentation: Array(pemText.utf8))
/// print(certificate.topic ?? "not a push certificate", certificate.environment)
/// ```
public final class Certificate: @unchecked Sendable {
    // @unchecked: the X509 is never modified after parsing, and OpenSSL's read accessors used here
    // are safe to call from several threads at once on a shared certificate.

    /// The owned `X509*` (one reference, released in `deinit`). It never leaves this module: the
    /// TLS code asks for what it needs (`Credentials+TLS.swift`).
    let pointer: OpaquePointer

    /// The certificate's DER encoding (what a `.cer` file holds).
    public let derRepresentation: [UInt8]

    /// Takes over one reference to `pointer`.
    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
        self.derRepresentation = Self.encode(pointer)
    }

    /// Shares `pointer`, adding a reference (for certificates borrowed from another object).
    convenience init(retaining pointer: OpaquePointer) {
        X509_up_ref(pointer)
        self.init(taking: pointer)
    }

    deinit {
        X509_free(pointer)
    }

    /// Parses a DER-encoded certificate (a `.cer` file). The bytes must hold exactly one certificate.
    ///
    /// - Throws: `LegacyAPNsError` `.corruptCredentials` when the bytes are not a certificate.
    public convenience init(derRepresentation: [UInt8]) throws {
        let parsed: OpaquePointer? = OpenSSLLibrary.shared.withContext {
            ERR_clear_error()
            return derRepresentation.withUnsafeBufferPointer { buffer in
                guard let base = buffer.baseAddress else { return nil }
                var cursor: UnsafePointer<UInt8>? = base
                guard let certificate = d2i_X509(nil, &cursor, buffer.count) else { return nil }
                guard let cursor, cursor - base == buffer.count else {
                    X509_free(certificate)
                    return nil
                }
                return certificate
            }
        }
        guard let parsed else {
            let detail = OpenSSLError.drain("d2i_X509").shortReason.map { " (\($0))" } ?? ""
            throw LegacyAPNsError(.corruptCredentials, "not a DER certificate\(detail)")
        }
        self.init(taking: parsed)
    }

    /// Parses the first certificate of PEM text (`-----BEGIN CERTIFICATE-----`). Other blocks
    /// (keys, further certificates) are ignored; use ``certificates(pemRepresentation:)-([UInt8])`` for all.
    ///
    /// - Throws: `LegacyAPNsError` `.missingCredentials` when there is no certificate block,
    ///   `.corruptCredentials` when the first one is damaged.
    public convenience init(pemRepresentation: [UInt8]) throws {
        let bio = MemoryBIO(pemRepresentation)
        let parsed: OpaquePointer? = OpenSSLLibrary.shared.withContext {
            ERR_clear_error()
            return PEM_read_bio_X509(bio.pointer, nil, nil, nil)
        }
        guard let parsed else {
            let error = OpenSSLError.drain("PEM_read_bio_X509")
            if error.contains(reason: PEM_R_NO_START_LINE) {
                throw LegacyAPNsError(.missingCredentials, "no certificate in the PEM data")
            }
            let detail = error.shortReason.map { ": \($0)" } ?? ""
            throw LegacyAPNsError(.corruptCredentials, "damaged certificate in the PEM data\(detail)")
        }
        self.init(taking: parsed)
    }

    /// Every certificate in PEM text, in order (a certificate followed by its chain, a CA bundle).
    /// Stops at the first damaged block; returns an empty array when there is none.
    public static func certificates(pemRepresentation: [UInt8]) -> [Certificate] {
        let bio = MemoryBIO(pemRepresentation)
        return OpenSSLLibrary.shared.withContext {
            ERR_clear_error()
            var certificates: [Certificate] = []
            while let parsed = PEM_read_bio_X509(bio.pointer, nil, nil, nil) {
                certificates.append(Certificate(taking: parsed))
            }
            ERR_clear_error()
            return certificates
        }
    }

    /// The certificate as PEM text: `-----BEGIN CERTIFICATE-----`, base64 lines of 64 characters,
    /// `-----END CERTIFICATE-----` and a final newline.
    public var pemRepresentation: String {
        let bio = MemoryBIO()
        guard PEM_write_bio_X509(bio.pointer, pointer) == 1 else {
            fatalError("OpenSSL could not write a parsed certificate as PEM (out of memory)")
        }
        return bio.string
    }

    private static func encode(_ pointer: OpaquePointer) -> [UInt8] {
        let count = i2d_X509(pointer, nil)
        guard count > 0 else { fatalError("OpenSSL could not encode a parsed certificate") }
        var bytes = [UInt8](repeating: 0, count: Int(count))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_X509(pointer, &cursor)
        }
        return bytes
    }

    // MARK: Names

    /// The subject in RFC 4514 form, e.g.
    /// `C=US,O=Example Corp,OU=TEAM123456,CN=Apple Push Services: com.example.app,UID=com.example.app`.
    public var subject: String { subjectName.description }

    /// The issuer in RFC 4514 form.
    public var issuer: String { issuerName.description }

    /// The subject's attributes, with accessors for UID, CN and OU.
    public var subjectName: DistinguishedName { Self.name(X509_get_subject_name(pointer)) }

    /// The issuer's attributes.
    public var issuerName: DistinguishedName { Self.name(X509_get_issuer_name(pointer)) }

    private static func name(_ name: OpaquePointer?) -> DistinguishedName {
        guard let name else { return DistinguishedName(attributes: []) }
        var attributes: [DistinguishedName.Attribute] = []
        for index in 0..<X509_NAME_entry_count(name) {
            guard let entry = X509_NAME_get_entry(name, index) else { continue }
            let type = objectName(X509_NAME_ENTRY_get_object(entry))
            var value = ""
            var utf8: UnsafeMutablePointer<UInt8>? = nil
            let length = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry))
            if length >= 0, let utf8 {
                value = String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
                COpenSSL_OPENSSL_free(utf8)
            }
            attributes.append(DistinguishedName.Attribute(type: type, value: value))
        }
        ERR_clear_error()
        return DistinguishedName(attributes: attributes)
    }

    /// The short name of an object ("CN"), else its dotted OID.
    static func objectName(_ object: OpaquePointer?) -> String {
        guard let object else { return "?" }
        let nid = OBJ_obj2nid(object)
        if nid != NID_undef, let shortName = OBJ_nid2sn(nid) { return String(cString: shortName) }
        var buffer = [CChar](repeating: 0, count: 128)
        let length = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
        guard length > 0 else { return "?" }
        return String(decoding: buffer.prefix(Int(min(length, 127))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The serial number's bytes, big-endian, as stored (usually 16-20 bytes).
    public var serialNumber: [UInt8] {
        guard let serial = X509_get0_serialNumber(pointer) else { return [] }
        return Self.bytes(of: serial)
    }

    // MARK: Validity

    /// The start of the validity period, in UNIX seconds.
    public var notBefore: Int64 { Self.seconds(X509_get0_notBefore(pointer)) }

    /// The end of the validity period (inclusive), in UNIX seconds.
    public var notAfter: Int64 { Self.seconds(X509_get0_notAfter(pointer)) }

    /// ``notBefore`` as ISO-8601 UTC text (`2026-01-31T12:00:00Z`).
    public var notBeforeISO8601: String { UTCTime.iso8601(notBefore) }

    /// ``notAfter`` as ISO-8601 UTC text (`2027-01-31T12:00:00Z`).
    public var notAfterISO8601: String { UTCTime.iso8601(notAfter) }

    /// Whether the certificate is a certificate authority (basic constraints `CA:TRUE`, or an old
    /// v1 self-signed root): a CA's subject names an issuer, never a team or a topic.
    public var isCertificateAuthority: Bool {
        OpenSSLLibrary.shared.withContext {
            let result = X509_check_ca(pointer)
            ERR_clear_error()
            return result != 0
        }
    }

    /// Whether the certificate is valid at `time` (UNIX seconds): `notBefore <= time <= notAfter`.
    public func isValid(at time: Int64) -> Bool {
        notBefore <= time && time <= notAfter
    }

    private static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64 {
        var fields = tm()
        guard let time, ASN1_TIME_to_tm(time, &fields) == 1 else {
            ERR_clear_error()
            return 0
        }
        return UTCTime.seconds(
            year: Int64(fields.tm_year) + 1900, month: Int64(fields.tm_mon) + 1, day: Int64(fields.tm_mday),
            hour: Int64(fields.tm_hour), minute: Int64(fields.tm_min), second: Int64(fields.tm_sec))
    }

    // MARK: Fingerprints and key

    /// SHA-256 over ``derRepresentation`` (32 bytes), as `openssl x509 -fingerprint -sha256` shows.
    public var sha256Fingerprint: [UInt8] { Self.digest(derRepresentation, name: "SHA256") }

    /// SHA-1 over ``derRepresentation`` (20 bytes): the "thumbprint" Keychain and Windows show.
    public var sha1Fingerprint: [UInt8] { Self.digest(derRepresentation, name: "SHA1") }

    /// The `name` digest ("SHA256", "SHA1") of `bytes`.
    static func digest(_ bytes: [UInt8], name: String) -> [UInt8] {
        OpenSSLLibrary.shared.withContext {
            guard let digest = EVP_MD_fetch(OpenSSLLibrary.shared.context, name, nil) else {
                fatalError("OpenSSL has no \(name) digest")
            }
            defer { EVP_MD_free(digest) }
            var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            guard EVP_Digest(bytes, bytes.count, &output, &length, digest, nil) == 1 else {
                fatalError("OpenSSL could not compute \(name)")
            }
            return Array(output.prefix(Int(length)))
        }
    }

    /// The public key's algorithm and size ("RSA 2048-bit" for every Apple push certificate).
    public var publicKeyDescription: KeyDescription {
        guard let key = X509_get0_pubkey(pointer) else {
            ERR_clear_error()
            return KeyDescription(algorithm: KeyDescription.Algorithm(rawValue: "unknown"), bits: 0)
        }
        return KeyDescription(key: key)
    }

    /// The public key as a DER `SubjectPublicKeyInfo` (what `openssl x509 -pubkey` prints as PEM).
    public var publicKeyDERRepresentation: [UInt8] {
        guard let key = X509_get0_pubkey(pointer) else {
            ERR_clear_error()
            return []
        }
        return Self.publicKeyDER(key)
    }

    /// `SubjectPublicKeyInfo` DER of an `EVP_PKEY*`.
    static func publicKeyDER(_ key: OpaquePointer) -> [UInt8] {
        let count = i2d_PUBKEY(key, nil)
        guard count > 0 else {
            ERR_clear_error()
            return []
        }
        var bytes = [UInt8](repeating: 0, count: Int(count))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_PUBKEY(key, &cursor)
        }
        return bytes
    }

    // MARK: Extensions

    /// The value of an extension (the contents of its `extnValue` OCTET STRING), found by dotted
    /// OID such as `"1.2.840.113635.100.6.3.6"`; nil when the certificate does not have it.
    public func extensionValue(oid: String) -> [UInt8]? {
        guard let object = OBJ_txt2obj(oid, 1) else {
            ERR_clear_error()
            return nil
        }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(pointer, object, -1)
        guard index >= 0, let ext = X509_get_ext(pointer, index), let data = X509_EXTENSION_get_data(ext) else {
            return nil
        }
        return Self.bytes(of: UnsafePointer(data))
    }

    /// The bytes of an `ASN1_STRING` (and its subtypes: OCTET STRING, INTEGER magnitude).
    static func bytes(of string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
        let length = Int(ASN1_STRING_length(string))
        guard length > 0, let data = ASN1_STRING_get0_data(string) else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }
}

extension Certificate: Hashable {
    /// Certificates are equal when their DER encodings are.
    public static func == (lhs: Certificate, rhs: Certificate) -> Bool {
        lhs === rhs || lhs.derRepresentation == rhs.derRepresentation
    }

    /// Hashes the DER encoding.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(derRepresentation)
    }
}

extension Certificate: CustomStringConvertible {
    /// "Certificate(<subject>)".
    public var description: String { "Certificate(\(subject))" }
}
