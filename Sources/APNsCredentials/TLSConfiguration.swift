import APNsCore

/// How a client authenticates itself and which servers it trusts.
///
/// There is deliberately no way to switch server verification off: trust a local gateway by
/// giving its CA certificate (``Trust/certificates(_:)``). The host name is verified either way,
/// and TLS 1.2 is the oldest version offered.
public struct TLSConfiguration: Sendable {
    /// Which certificate authorities vouch for the server.
    public enum Trust: Sendable {
        /// The operating system's CA store.
        case systemDefault
        /// Only these certificates (e.g. the CA of a local gateway simulator).
        case certificates([Certificate])

        /// Trust the CA certificates in a PEM bundle.
        ///
        /// - Throws: `LegacyAPNsError` `.corruptCredentials` when it holds none.
        public static func pem(_ bytes: [UInt8]) throws -> Trust {
            let certificates = Certificate.certificates(pemRepresentation: bytes)
            guard !certificates.isEmpty else {
                throw LegacyAPNsError(.corruptCredentials, "no PEM certificate found in the CA file")
            }
            return .certificates(certificates)
        }
    }

    /// A TLS protocol version.
    public enum Version: Hashable, Sendable {
        /// TLS 1.2 (RFC 5246), the newest version Apple's binary gateway is known to have spoken.
        case tls12
        /// TLS 1.3 (RFC 8446).
        case tls13
    }

    /// The client certificate and key (the provider certificate for APNs).
    public var identity: ClientIdentity?
    /// Which CAs vouch for the server.
    public var trust: Trust
    /// Oldest TLS version accepted (1.2 unless raised).
    public var minimumVersion: Version

    /// Creates a configuration: `identity` is the client certificate and key, `trust` the server's CAs.
    public init(identity: ClientIdentity?, trust: Trust = .systemDefault, minimumVersion: Version = .tls12) {
        self.identity = identity
        self.trust = trust
        self.minimumVersion = minimumVersion
    }
}
