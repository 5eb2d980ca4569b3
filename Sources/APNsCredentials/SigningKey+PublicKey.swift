import APNsCore
internal import COpenSSL

extension SigningKey {
    /// The public half of an APNs signing key: verifies `ProviderToken`s, for servers and
    /// simulators that accept token authentication without holding the secret.
    ///
    /// ```swift
    /// let publicKey = try SigningKey.PublicKey(pemRepresentation: Array(pemText.utf8))
    /// let token = try ProviderToken(authorizationHeaderValue: header)
    /// try publicKey.verify(token)  // throws ProviderToken.Failure.badSignature
    /// ```
    public final class PublicKey: @unchecked Sendable, Hashable, CustomStringConvertible {
        // @unchecked: the EVP_PKEY holds only a public key and is never modified after loading;
        // OpenSSL allows concurrent verification with one shared key.

        /// The owned `EVP_PKEY*` (public key only; one reference, released in `deinit`).
        let pointer: OpaquePointer

        /// The key as a DER `SubjectPublicKeyInfo` (what `openssl pkey -pubout -outform DER` writes).
        public let derRepresentation: [UInt8]

        /// SHA-256 of ``derRepresentation`` as 64 lowercase hex digits (what
        /// `openssl pkey -pubout -outform DER | sha256sum` prints for the `.p8`).
        public let fingerprint: String

        /// Takes over one reference to `pointer`, a checked P-256 key.
        private init(taking pointer: OpaquePointer) {
            self.pointer = pointer
            self.derRepresentation = Certificate.publicKeyDER(pointer)
            self.fingerprint = CertificateSummary.hex(
                Certificate.digest(derRepresentation, name: "SHA256"), separator: "", uppercase: false)
        }

        /// A public-key-only copy of a private key's public half.
        convenience init(publicHalfOf privateKey: OpaquePointer) {
            let der = Certificate.publicKeyDER(privateKey)
            guard let parsed = Self.parseDER(der) else {
                fatalError("OpenSSL could not re-read the public key it encoded (out of memory)")
            }
            self.init(taking: parsed)
        }

        /// Parses a DER `SubjectPublicKeyInfo` (the body of a `BEGIN PUBLIC KEY` block).
        ///
        /// - Throws: `LegacyAPNsError` `.corruptCredentials` when the bytes are not exactly one
        ///   public key, `.unsupportedKey` when it is not EC P-256.
        public convenience init(derRepresentation: [UInt8]) throws {
            guard let parsed = Self.parseDER(derRepresentation) else {
                let detail = OpenSSLError.drain("d2i_PUBKEY").shortReason.map { " (\($0))" } ?? ""
                throw LegacyAPNsError(.corruptCredentials, "not a DER public key\(detail)")
            }
            try self.init(takingP256: parsed)
        }

        /// Reads a public key from PEM text (`-----BEGIN PUBLIC KEY-----`, as
        /// `openssl pkey -pubout` writes it). Given a `.p8` private key instead, takes its public
        /// half, so a server can be pointed at either file.
        ///
        /// - Throws: `LegacyAPNsError` as ``SigningKey/init(pemRepresentation:)`` does, and
        ///   `.corruptCredentials` for a damaged public key block.
        public convenience init(pemRepresentation: [UInt8]) throws {
            let labels = SigningKey.pemLabels(pemRepresentation)
            guard labels.contains("PUBLIC KEY") else {
                guard labels.contains(where: { $0.hasSuffix("PRIVATE KEY") }) else {
                    if labels.contains(where: { $0.hasSuffix("CERTIFICATE") }) {
                        throw LegacyAPNsError(
                            .missingCredentials, "this is a certificate, not an APNs signing key or its public key")
                    }
                    throw SigningKey.noPrivateKeyError(pemRepresentation, labels: labels)
                }
                let key = try SigningKey(pemRepresentation: pemRepresentation)
                self.init(publicHalfOf: key.privateKey.pointer)
                return
            }
            let bio = MemoryBIO(pemRepresentation)
            ERR_clear_error()
            guard let parsed = PEM_read_bio_PUBKEY_ex(bio.pointer, nil, nil, nil, OpenSSLLibrary.shared.context, nil)
            else {
                let detail = OpenSSLError.drain("PEM_read_bio_PUBKEY").shortReason.map { ": \($0)" } ?? ""
                throw LegacyAPNsError(.corruptCredentials, "damaged public key in the PEM data\(detail)")
            }
            try self.init(takingP256: parsed)
        }

        /// Takes `parsed` when it is an EC P-256 key; frees it and throws otherwise.
        private convenience init(takingP256 parsed: OpaquePointer) throws {
            do {
                try SigningKey.requireP256(parsed)
            } catch {
                EVP_PKEY_free(parsed)
                throw error
            }
            self.init(taking: parsed)
        }

        deinit {
            EVP_PKEY_free(pointer)
        }

        private static func parseDER(_ der: [UInt8]) -> OpaquePointer? {
            ERR_clear_error()
            return der.withUnsafeBufferPointer { buffer in
                guard let base = buffer.baseAddress else { return nil }
                var cursor: UnsafePointer<UInt8>? = base
                guard let key = d2i_PUBKEY_ex(nil, &cursor, buffer.count, OpenSSLLibrary.shared.context, nil) else {
                    return nil
                }
                guard let cursor, cursor - base == buffer.count else {
                    EVP_PKEY_free(key)
                    return nil
                }
                return key
            }
        }

        /// The key as PEM text (`-----BEGIN PUBLIC KEY-----`), as `openssl pkey -pubout` writes it.
        public var pemRepresentation: String {
            let bio = MemoryBIO()
            guard PEM_write_bio_PUBKEY(bio.pointer, pointer) == 1 else {
                fatalError("OpenSSL could not write a loaded public key as PEM (out of memory)")
            }
            return bio.string
        }

        /// The curve's NIST name: always "P-256".
        public var curve: String { "P-256" }

        /// Checks that `token`'s signature is this key's ES256 signature over its header and claims.
        ///
        /// It does not look at the key id, the team id or the age of the token: those are the
        /// caller's (see `ProviderToken.Failure`).
        ///
        /// - Throws: `ProviderToken.Failure.badSignature` when the signature does not verify.
        public func verify(_ token: ProviderToken) throws(ProviderToken.Failure) {
            guard isValidSignature(for: token) else { throw .badSignature }
        }

        /// Whether `token`'s signature is this key's ES256 signature over its header and claims.
        public func isValidSignature(for token: ProviderToken) -> Bool {
            guard let der = ECDSASignature.der(fromRaw: token.signature) else { return false }
            return token.withSigningInput { input in ECDSASignature.verify(der, message: input, key: pointer) }
        }

        /// Keys are equal when their public keys (DER) are.
        public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool {
            lhs === rhs || lhs.derRepresentation == rhs.derRepresentation
        }

        /// Hashes the DER encoding.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(derRepresentation)
        }

        /// "SigningKey.PublicKey(EC P-256, SHA-256 <fingerprint>)".
        public var description: String { "SigningKey.PublicKey(EC \(curve), SHA-256 \(fingerprint))" }
    }
}
