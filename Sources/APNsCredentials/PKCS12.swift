import APNsCore
internal import COpenSSL

/// Reading and writing PKCS#12 (`.p12`/`.pfx`) files with OpenSSL, in the library's private
/// context (which has the `legacy` provider for RC2-40).
enum PKCS12 {
    /// What a PKCS#12 file holds.
    struct Contents {
        var certificate: Certificate?
        var privateKey: PrivateKey?
        var chain: [Certificate]
    }

    /// Opens a PKCS#12 file.
    ///
    /// With a nil or empty passphrase both the empty string and "no password" (NULL) are tried,
    /// since tools disagree on which one an empty passphrase means. A failed MAC check is a wrong
    /// passphrase; bytes that do not decode are not a PKCS#12 file.
    static func parse(_ bytes: [UInt8], passphrase: String?) throws -> Contents {
        try OpenSSLLibrary.shared.withContext {
            ERR_clear_error()
            guard let file = decode(bytes) else {
                let reason = OpenSSLError.drain("d2i_PKCS12").shortReason ?? "unreadable"
                let hint =
                    reason == "too long" || reason == "header too long" ? "truncated or damaged (\(reason))" : reason
                throw LegacyAPNsError(.corruptCredentials, "not a PKCS#12 file: \(hint)")
            }
            defer { PKCS12_free(file) }

            let hasMAC = PKCS12_mac_present(file) == 1
            // Without a MAC, NULL goes first: trying "" gives the file a MAC (below), after which
            // OpenSSL would turn a NULL password back into "".
            let empty: [String?] = hasMAC ? ["", nil] : [nil, ""]
            let candidates: [String?] = passphrase.map { $0.isEmpty ? empty : [$0] } ?? empty
            var lastError = OpenSSLError(operation: "PKCS12_parse", messages: [], codes: [])
            for candidate in try macVerified(file, candidates) {
                ERR_clear_error()
                if !hasMAC, let candidate {
                    // PKCS12_parse refuses a MAC-less file whenever a password is given (it insists
                    // on verifying a MAC first). Give this in-memory copy a MAC made with the
                    // candidate: it proves nothing, and decryption still decides.
                    guard PKCS12_set_mac(file, candidate, -1, nil, 0, 1, nil) == 1 else {
                        throw parseFailure(OpenSSLError.drain("PKCS12_set_mac"))
                    }
                }
                var key: OpaquePointer? = nil
                var certificate: OpaquePointer? = nil
                var stack: OpaquePointer? = nil
                let parsed = withOptionalCString(candidate) { PKCS12_parse(file, $0, &key, &certificate, &stack) }
                if parsed == 1 {
                    ERR_clear_error()
                    let contents = Contents(
                        certificate: certificate.map(Certificate.init(taking:)),
                        privateKey: key.map(PrivateKey.init(taking:)),
                        chain: takeCertificates(stack))
                    // PKCS12_parse keeps the first key it meets and drops the others silently.
                    guard let bags = bags(of: file, passphrase: candidate), bags.keys.count > 1 else { return contents }
                    return try choose(keys: bags.keys, certificates: bags.certificates)
                }
                lastError = OpenSSLError.drain("PKCS12_parse")
            }
            throw parseFailure(lastError)
        }
    }

    /// Every private key and certificate in the file, in file order, or nil when the bags cannot be
    /// read (PKCS12_parse could, so that does not happen). Keys are only decrypted when there is
    /// more than one.
    private static func bags(of file: OpaquePointer, passphrase: String?) -> (
        keys: [PrivateKey], certificates: [Certificate]
    )? {
        guard let safes = PKCS12_unpack_authsafes(file) else { return nil }
        defer { COpenSSL_sk_PKCS7_pop_free(safes) }
        var stacks: [OpaquePointer] = []
        defer { for stack in stacks { COpenSSL_sk_PKCS12_SAFEBAG_pop_free(stack) } }
        for index in 0..<COpenSSL_sk_PKCS7_num(safes) {
            guard let safe = COpenSSL_sk_PKCS7_value(safes, index) else { return nil }
            let stack: OpaquePointer?
            switch COpenSSL_PKCS7_type_nid(safe) {
            case NID_pkcs7_data:
                stack = PKCS12_unpack_p7data(safe)
            case NID_pkcs7_encrypted:
                stack = withOptionalCString(passphrase) { PKCS12_unpack_p7encdata(safe, $0, -1) }
            default:
                continue
            }
            guard let stack else { return nil }
            stacks.append(stack)
        }
        var bags: [OpaquePointer] = []
        func collect(_ stack: OpaquePointer) {
            for index in 0..<COpenSSL_sk_PKCS12_SAFEBAG_num(stack) {
                guard let bag = COpenSSL_sk_PKCS12_SAFEBAG_value(stack, index) else { continue }
                if PKCS12_SAFEBAG_get_nid(bag) == NID_safeContentsBag, let nested = PKCS12_SAFEBAG_get0_safes(bag) {
                    collect(nested)
                } else {
                    bags.append(bag)
                }
            }
        }
        for stack in stacks { collect(stack) }
        let keyBags = bags.filter { [NID_keyBag, NID_pkcs8ShroudedKeyBag].contains(PKCS12_SAFEBAG_get_nid($0)) }
        guard keyBags.count > 1 else { return ([], []) }
        var keys: [PrivateKey] = []
        for bag in keyBags {
            let context = OpenSSLLibrary.shared.context
            if PKCS12_SAFEBAG_get_nid(bag) == NID_keyBag {
                guard let info = PKCS12_SAFEBAG_get0_p8inf(bag), let key = EVP_PKCS82PKEY_ex(info, context, nil)
                else { return nil }
                keys.append(PrivateKey(taking: key))
            } else {
                guard
                    let info = withOptionalCString(passphrase, { PKCS12_decrypt_skey_ex(bag, $0, -1, context, nil) })
                else { return nil }
                defer { PKCS8_PRIV_KEY_INFO_free(info) }
                guard let key = EVP_PKCS82PKEY_ex(info, context, nil) else { return nil }
                keys.append(PrivateKey(taking: key))
            }
        }
        let certificates = bags.compactMap { bag -> Certificate? in
            guard PKCS12_SAFEBAG_get_nid(bag) == NID_certBag, PKCS12_SAFEBAG_get_bag_nid(bag) == NID_x509Certificate
            else { return nil }
            return PKCS12_SAFEBAG_get1_cert(bag).map(Certificate.init(taking:))
        }
        ERR_clear_error()
        return (keys, certificates)
    }

    /// For a file with several keys: the key that belongs to a certificate, with that certificate
    /// as the leaf and the others as the chain. Several such pairs are several identities, and
    /// which one was meant cannot be told: refused, as is a file where no key has its certificate.
    static func choose(keys: [PrivateKey], certificates: [Certificate]) throws -> Contents {
        var pairs: [(key: PrivateKey, certificate: Certificate)] = []
        for key in keys {
            guard let certificate = certificates.first(where: key.matches) else { continue }
            if !pairs.contains(where: { $0.certificate.derRepresentation == certificate.derRepresentation }) {
                pairs.append((key, certificate))
            }
        }
        switch pairs.count {
        case 0:
            throw LegacyAPNsError(
                .keyMismatch,
                "the PKCS#12 file holds \(keys.count) private keys and none of them belongs to a certificate in it")
        case 1:
            let leaf = pairs[0].certificate
            return Contents(
                certificate: leaf, privateKey: pairs[0].key,
                chain: certificates.filter { $0.derRepresentation != leaf.derRepresentation })
        default:
            let names = pairs.map { "'\($0.certificate.subjectName.commonName ?? $0.certificate.subject)'" }
            throw LegacyAPNsError(
                .unsupportedCredentials,
                "the PKCS#12 file holds \(pairs.count) identities (\(names.joined(separator: " and "))), and which one to "
                    + "use cannot be told: export the one you mean on its own")
        }
    }

    /// The candidate passphrases worth trying: the one the MAC accepts, or all when there is no MAC.
    private static func macVerified(_ file: OpaquePointer, _ candidates: [String?]) throws -> [String?] {
        guard PKCS12_mac_present(file) == 1 else { return candidates }
        for candidate in candidates {
            let verified = withOptionalCString(candidate) { PKCS12_verify_mac(file, $0, $0 == nil ? 0 : -1) }
            if verified == 1 {
                ERR_clear_error()
                return [candidate]
            }
        }
        let error = OpenSSLError.drain("PKCS12_verify_mac")
        if error.contains(reason: COpenSSL_ERR_R_UNSUPPORTED) {
            throw LegacyAPNsError(
                .unsupportedCredentials, "the PKCS#12 file's integrity check uses an algorithm OpenSSL cannot compute")
        }
        throw LegacyAPNsError(.wrongPassphrase, "wrong passphrase for the PKCS#12 file")
    }

    /// The error for a file whose MAC (if any) verified but whose contents did not parse.
    static func parseFailure(
        _ error: OpenSSLError, hasLegacyProvider: Bool = OpenSSLLibrary.shared.hasLegacyProvider
    ) -> LegacyAPNsError {
        if error.contains(reason: COpenSSL_ERR_R_UNSUPPORTED) {
            if !hasLegacyProvider {
                return LegacyAPNsError(
                    .unsupportedCredentials,
                    "the PKCS#12 file uses legacy encryption (RC2-40, as old Keychain exports do), which needs "
                        + "OpenSSL's 'legacy' provider, and it is not installed (look for ossl-modules/legacy.so); "
                        + "or re-export the file with modern encryption")
            }
            return LegacyAPNsError(
                .unsupportedCredentials, "the PKCS#12 file uses an encryption algorithm OpenSSL does not support")
        }
        let decryptFailures: [Int32] = [PKCS12_R_PKCS12_CIPHERFINAL_ERROR, PKCS12_R_MAC_VERIFY_FAILURE]
        if decryptFailures.contains(where: { error.contains(reason: $0) }) {
            return LegacyAPNsError(.wrongPassphrase, "wrong passphrase for the PKCS#12 file")
        }
        let detail = error.shortReason.map { ": \($0)" } ?? ""
        return LegacyAPNsError(.corruptCredentials, "damaged PKCS#12 file\(detail)")
    }

    private static func decode(_ bytes: [UInt8]) -> OpaquePointer? {
        bytes.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            guard cursor != nil else { return nil }
            return d2i_PKCS12(nil, &cursor, buffer.count)
        }
    }

    /// Wraps every certificate of a `STACK_OF(X509)*` and frees the stack.
    static func takeCertificates(_ stack: OpaquePointer?) -> [Certificate] {
        guard let stack else { return [] }
        defer { COpenSSL_sk_X509_pop_free(stack) }
        return (0..<COpenSSL_sk_X509_num(stack)).compactMap { index in
            COpenSSL_sk_X509_value(stack, index).map(Certificate.init(retaining:))
        }
    }

    /// Writes a PKCS#12 file holding the key, its certificate and the chain.
    static func create(
        certificate: Certificate, privateKey: PrivateKey, chain: [Certificate],
        passphrase: String, encryption: PKCS12Encryption, friendlyName: String?
    ) throws -> [UInt8] {
        try OpenSSLLibrary.shared.withContext {
            ERR_clear_error()
            let stack: OpaquePointer? = chain.isEmpty ? nil : COpenSSL_sk_X509_new_null()
            // The stack borrows the certificates (no extra reference), so only the stack is freed.
            defer { if let stack { COpenSSL_sk_X509_free(stack) } }
            for member in chain {
                guard let stack, COpenSSL_sk_X509_push(stack, member.pointer) > 0 else {
                    fatalError("OpenSSL could not build a certificate stack (out of memory)")
                }
            }
            let created: OpaquePointer? = withOptionalCString(friendlyName) { name in
                switch encryption {
                case .modern:
                    // 0 everywhere: OpenSSL 3's defaults (AES-256-CBC, PBKDF2, SHA-256 MAC, 2048 iterations).
                    return PKCS12_create_ex(
                        passphrase, name, privateKey.pointer, certificate.pointer, stack,
                        0, 0, 0, 0, 0, OpenSSLLibrary.shared.context, nil)
                case .legacy:
                    // -1 MAC iterations: no MAC yet; a SHA-1 one is added below (the default would be SHA-256).
                    return PKCS12_create_ex(
                        passphrase, name, privateKey.pointer, certificate.pointer, stack,
                        NID_pbe_WithSHA1And3_Key_TripleDES_CBC, NID_pbe_WithSHA1And40BitRC2_CBC,
                        iterations, -1, 0, OpenSSLLibrary.shared.context, nil)
                }
            }
            guard let created else { throw creationFailure(OpenSSLError.drain("PKCS12_create_ex")) }
            defer { PKCS12_free(created) }
            if encryption == .legacy {
                guard PKCS12_set_mac(created, passphrase, -1, nil, 0, iterations, EVP_sha1()) == 1 else {
                    throw creationFailure(OpenSSLError.drain("PKCS12_set_mac"))
                }
            }
            let bio = MemoryBIO()
            guard i2d_PKCS12_bio(bio.pointer, created) == 1 else {
                throw creationFailure(OpenSSLError.drain("i2d_PKCS12_bio"))
            }
            return bio.contents
        }
    }

    /// Iterations for the legacy key derivation and MAC (what `openssl pkcs12 -export -legacy` uses).
    private static let iterations: Int32 = 2048

    private static func creationFailure(_ error: OpenSSLError) -> LegacyAPNsError {
        if error.contains(reason: COpenSSL_ERR_R_UNSUPPORTED), !OpenSSLLibrary.shared.hasLegacyProvider {
            return LegacyAPNsError(
                .unsupportedCredentials,
                "legacy PKCS#12 encryption (RC2-40) needs OpenSSL's 'legacy' provider, which is not installed")
        }
        return LegacyAPNsError(.corruptCredentials, "could not create the PKCS#12 file: \(error.description)")
    }

    /// Calls `body` with a C string for `text`, or NULL.
    static func withOptionalCString<Result>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
        guard let text else { return body(nil) }
        return text.withCString { body($0) }
    }
}
