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
                    return Contents(
                        certificate: certificate.map(Certificate.init(taking:)),
                        privateKey: key.map(PrivateKey.init(taking:)),
                        chain: takeCertificates(stack))
                }
                lastError = OpenSSLError.drain("PKCS12_parse")
            }
            throw parseFailure(lastError)
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
