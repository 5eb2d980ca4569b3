/// The one error type that the library's operations throw.
///
/// A `code` says what kind of problem it is (stable, for programs to branch on), `reason` says
/// what happened in words a person can act on: it names the thing and, where there is one, the
/// fix ("token has 31 bytes, expected 32"), and `underlying` keeps the detail it came from (the
/// drained OpenSSL error queue, a ``FrameDecodingError`` with its byte offset). Reasons never
/// contain passphrases or key material.
///
/// What to *do* about an error is decided in one place, here: ``category`` (input, configuration,
/// connection, cancelled; the command line turns it into its exit status), ``stopsSending``
/// (retrying cannot help), ``isCertificateProblem``, and ``timeLimit`` (which configured limit
/// ran out, so a program can name the setting that allows longer). Every client, poller and the
/// command line asks these instead of keeping its own list of codes, or reading the reason.
///
/// Decoders are codecs and throw their own typed errors (``FrameDecodingError`` carries the
/// status a gateway would answer and the byte offset); where a decoding failure ends an
/// operation, it surfaces as a `LegacyAPNsError` whose `underlying` is that value.
///
/// A gateway refusing one notification is *not* an error: it is a value in ``SendReport``.
public struct LegacyAPNsError: Error, Sendable, CustomStringConvertible {
    /// What kind of problem an error is. The set is closed: only the library creates codes, so a
    /// `switch` over the static members can rely on them (new ones may come in minor releases).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidToken, invalidPayload, payloadTooLarge, invalidValue, malformedFrame, malformedInput
            case wrongPassphrase, missingPassphrase, corruptCredentials, keyMismatch, missingCredentials
            case unsupportedCredentials, unsupportedKey, tlsConfiguration, serverUntrusted, certificateRejected,
                protocolRefused
            case handshakeFailed, connectionFailed, timedOut, fileError, cancelled
            case protocolViolation, streamUnavailable, malformedResponse
        }

        private let base: Base

        private init(_ base: Base) { self.base = base }

        /// The code's stable name ("certificateRejected").
        public var name: String { base.rawValue }
        /// The code's name.
        public var description: String { name }

        /// A device token that is not hex, or has the wrong length.
        public static let invalidToken = Code(.invalidToken)
        /// A payload that is not valid JSON, or that the builder could not serialise.
        public static let invalidPayload = Code(.invalidPayload)
        /// A payload larger than the configured limit.
        public static let payloadTooLarge = Code(.payloadTooLarge)
        /// A field value the protocol cannot carry (priority 7, identifier out of range, ...).
        public static let invalidValue = Code(.invalidValue)
        /// Bytes that do not form a valid frame (or feedback tuple).
        public static let malformedFrame = Code(.malformedFrame)
        /// A JSON Lines input line that cannot be turned into a notification.
        public static let malformedInput = Code(.malformedInput)
        /// The passphrase does not open the PKCS#12 file or the encrypted key.
        public static let wrongPassphrase = Code(.wrongPassphrase)
        /// The credentials are encrypted and no passphrase was given.
        public static let missingPassphrase = Code(.missingPassphrase)
        /// Credential bytes that are not a certificate, key or PKCS#12 file.
        public static let corruptCredentials = Code(.corruptCredentials)
        /// A private key that does not belong to the certificate.
        public static let keyMismatch = Code(.keyMismatch)
        /// A credential that lacks a certificate or a key where one is needed.
        public static let missingCredentials = Code(.missingCredentials)
        /// Credentials protected with an algorithm this OpenSSL cannot use (RC2-40 PKCS#12 files
        /// when OpenSSL's `legacy` provider is not installed), a key of the wrong type, or a
        /// PKCS#12 file holding more than one identity (several keys with their certificates).
        public static let unsupportedCredentials = Code(.unsupportedCredentials)
        /// A key of a kind this use does not take: APNs signing keys (`.p8`) are unencrypted EC
        /// P-256 keys, so an RSA, Ed25519 or P-384 key, or an encrypted one, is refused with this.
        public static let unsupportedKey = Code(.unsupportedKey)
        /// The TLS layer could not be set up (a context, a CA file).
        public static let tlsConfiguration = Code(.tlsConfiguration)
        /// The server's certificate or host name did not verify.
        public static let serverUntrusted = Code(.serverUntrusted)
        /// The server refused our client certificate (unknown CA, expired, revoked, wrong
        /// environment or topic).
        public static let certificateRejected = Code(.certificateRejected)
        /// The peer refused what we speak: the TLS version, the application protocol (ALPN), or
        /// it does not speak the expected protocol at all (a feedback port, a web server).
        public static let protocolRefused = Code(.protocolRefused)
        /// The TLS handshake failed for another reason.
        public static let handshakeFailed = Code(.handshakeFailed)
        /// The TCP connection could not be made, or broke and retries did not help.
        public static let connectionFailed = Code(.connectionFailed)
        /// Something did not happen in the time allowed.
        public static let timedOut = Code(.timedOut)
        /// A file could not be read or written.
        public static let fileError = Code(.fileError)
        /// The operation was cancelled.
        public static let cancelled = Code(.cancelled)
        /// The HTTP/2 peer broke the protocol (bytes that are not HTTP/2, a bad frame, flooding, an
        /// oversized header block): the connection is closing, after a GOAWAY where one can be sent.
        public static let protocolViolation = Code(.protocolViolation)
        /// No HTTP/2 stream is available for a request or response: the connection is going away
        /// (GOAWAY sent or received), its stream identifiers are used up, the stream has closed, or
        /// the local queue of waiting requests is full.
        public static let streamUnavailable = Code(.streamUnavailable)
        /// A server response that cannot be understood (a body that is not a JSON object, a
        /// `:status` that is not three digits).
        public static let malformedResponse = Code(.malformedResponse)
    }

    /// A configured time limit that an operation ran into: the setting to raise when the peer is
    /// merely slow. Open like ``Code``: new limits may come in minor releases.
    public struct TimeLimit: Hashable, Sendable, CustomStringConvertible {
        /// The limit's stable name ("readDeadline").
        public let name: String

        private init(_ name: String) { self.name = name }

        /// The limit's name.
        public var description: String { name }

        /// The feedback reader's deadline for one whole read (`FeedbackReader.Configuration.readDeadline`).
        public static let readDeadline = TimeLimit("readDeadline")
        /// The feedback reader's wait for the first byte (`FeedbackReader.Configuration.firstByteTimeout`):
        /// a peer that stays silent is not a feedback service.
        public static let firstByte = TimeLimit("firstByte")
        /// The feedback reader's longest silence after the first byte
        /// (`FeedbackReader.Configuration.idleTimeout`).
        public static let idle = TimeLimit("idle")
    }

    /// The broad kind of a failure, which decides what a caller can do about it.
    public enum Category: Hashable, Sendable {
        /// The input is wrong (a token, a payload, a line, a file): fix it and run again.
        case input
        /// The local credentials or TLS set-up are unusable (passphrase, key, CA file).
        case configuration
        /// The network, the peer or the TLS session failed, or the peer refused us.
        case connection
        /// The caller cancelled.
        case cancelled
    }

    /// What kind of problem this is.
    public var code: Code
    /// A one-line, human explanation.
    public var reason: String
    /// The error this one was made from, if any: an `OpenSSLError` value (APNsCredentials) with the drained
    /// OpenSSL error queue, a ``FrameDecodingError``, another `LegacyAPNsError`.
    public var underlying: (any Error & Sendable)?
    /// The configured time limit that ended the operation, if one did (a `.timedOut` error, or
    /// the `.protocolRefused` of a peer silent past the first-byte limit).
    public var timeLimit: TimeLimit?

    /// Creates an error.
    public init(_ code: Code, _ reason: String, underlying: (any Error & Sendable)? = nil) {
        self.code = code
        self.reason = reason
        self.underlying = underlying
    }

    /// Creates an error about a configured time limit that ran out.
    public init(_ code: Code, _ reason: String, timeLimit: TimeLimit) {
        self.init(code, reason)
        self.timeLimit = timeLimit
    }

    /// The human reason.
    public var description: String { reason }

    /// The broad kind of this failure.
    public var category: Category {
        switch code {
        case .invalidToken, .invalidPayload, .payloadTooLarge, .invalidValue, .malformedInput, .fileError:
            .input
        case .wrongPassphrase, .missingPassphrase, .corruptCredentials, .keyMismatch, .missingCredentials,
            .unsupportedCredentials, .unsupportedKey, .tlsConfiguration:
            .configuration
        case .cancelled:
            .cancelled
        default:  // serverUntrusted, certificateRejected, protocolRefused, handshakeFailed, connectionFailed,
            // timedOut, malformedFrame, protocolViolation, streamUnavailable, malformedResponse (a peer
            // that sends what the protocol does not allow, or goes away)
            .connection
        }
    }

    /// The server's certificate was not trusted, or the server refused ours.
    public var isCertificateProblem: Bool { code == .certificateRejected || code == .serverUntrusted }

    /// Whether retrying, on this connection or a new one, cannot help: a certificate problem, a
    /// refused protocol, unusable credentials or TLS set-up, cancellation. Senders stop at once
    /// instead of spending their retry budget; a failure that may heal (a reset, a refused TCP
    /// connection, a timeout) is retried.
    public var stopsSending: Bool {
        isCertificateProblem || code == .protocolRefused || category == .configuration || category == .cancelled
    }
}

extension LegacyAPNsError: Hashable {
    /// Equal when code and reason are (the underlying detail is not compared), so tests and
    /// reports can compare errors they construct.
    public static func == (lhs: LegacyAPNsError, rhs: LegacyAPNsError) -> Bool {
        lhs.code == rhs.code && lhs.reason == rhs.reason
    }

    /// Hashes code and reason.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(reason)
    }
}
