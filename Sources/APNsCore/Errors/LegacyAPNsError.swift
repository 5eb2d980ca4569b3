/// The one error type the library throws.
///
/// A `code` says what kind of problem it is (stable, for programs to branch on) and `reason`
/// says what happened in words a person can act on: it names the thing and, where there is one,
/// the fix ("token has 31 bytes, expected 32"). Reasons never contain passphrases or key material.
///
/// A gateway refusing one notification is *not* an error: it is a value in ``SendReport``.
public struct LegacyAPNsError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem an error is. Open for growth: new codes may appear in minor releases.
    public struct Code: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
        /// The code's stable name.
        public var rawValue: String
        /// Creates a code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// A device token that is not hex, or has the wrong length.
        public static let invalidToken = Code(rawValue: "invalidToken")
        /// A payload that is not valid JSON, or that the builder could not serialise.
        public static let invalidPayload = Code(rawValue: "invalidPayload")
        /// A payload larger than the configured limit.
        public static let payloadTooLarge = Code(rawValue: "payloadTooLarge")
        /// A field value the protocol cannot carry (priority 7, identifier out of range, ...).
        public static let invalidValue = Code(rawValue: "invalidValue")
        /// Bytes that do not form a valid frame.
        public static let malformedFrame = Code(rawValue: "malformedFrame")
        /// A JSON Lines input line that cannot be turned into a notification.
        public static let malformedInput = Code(rawValue: "malformedInput")
        /// The passphrase does not open the PKCS#12 file or the encrypted key.
        public static let wrongPassphrase = Code(rawValue: "wrongPassphrase")
        /// Credential bytes that are not a certificate, key or PKCS#12 file.
        public static let corruptCredentials = Code(rawValue: "corruptCredentials")
        /// A private key that does not belong to the certificate.
        public static let keyMismatch = Code(rawValue: "keyMismatch")
        /// A credential that lacks a certificate or a key where one is needed.
        public static let missingCredentials = Code(rawValue: "missingCredentials")
        /// Credentials protected with an algorithm this OpenSSL cannot use (RC2-40 PKCS#12 files
        /// when OpenSSL's `legacy` provider is not installed).
        public static let unsupportedCredentials = Code(rawValue: "unsupportedCredentials")
        /// A key of a kind this use does not take: APNs signing keys (`.p8`) are unencrypted EC
        /// P-256 keys, so an RSA, Ed25519 or P-384 key, or an encrypted one, is refused with this.
        public static let unsupportedKey = Code(rawValue: "unsupportedKey")
        /// The TLS layer could not be set up (a context, a CA file).
        public static let tlsConfiguration = Code(rawValue: "tlsConfiguration")
        /// The server's certificate or host name did not verify.
        public static let serverUntrusted = Code(rawValue: "serverUntrusted")
        /// The server refused our client certificate (unknown CA, expired, revoked).
        public static let certificateRejected = Code(rawValue: "certificateRejected")
        /// The TLS handshake failed for another reason.
        public static let handshakeFailed = Code(rawValue: "handshakeFailed")
        /// The TCP connection could not be made, or broke and retries did not help.
        public static let connectionFailed = Code(rawValue: "connectionFailed")
        /// Something did not happen in the time allowed.
        public static let timedOut = Code(rawValue: "timedOut")
        /// A file could not be read or written.
        public static let fileError = Code(rawValue: "fileError")
        /// The operation was cancelled.
        public static let cancelled = Code(rawValue: "cancelled")
    }

    /// What kind of problem this is.
    public var code: Code
    /// A one-line, human explanation.
    public var reason: String

    /// Creates an error.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// The human reason.
    public var description: String { reason }
}
