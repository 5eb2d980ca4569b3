import APNsCore

/// The facts about a push certificate that people and scripts check: who it is for, where it
/// works, how long it lasts, whether the key fits.
///
/// Built for a given moment (`now`, UNIX seconds) so expiry logic is testable without clocks.
/// ``jsonRepresentation`` is the `legacy-push inspect --json` object.
public struct CertificateSummary: Sendable, Hashable {
    /// Fewer days left than this deserves a warning.
    public static let warningPeriodDays = 30

    /// The subject in RFC 4514 form.
    public var subject: String
    /// The issuer in RFC 4514 form.
    public var issuer: String
    /// The subject's CN (`Apple Push Services: com.example.app`).
    public var commonName: String?
    /// The subject's OU: the team id of an Apple push certificate. Nil when the certificate is a
    /// CA (Apple's WWDR intermediates carry an OU such as `G4`, which is no team id).
    public var teamID: String?
    /// The bundle id from the subject's UID.
    public var topic: String?
    /// The topics with their kinds: from the topics extension when present, else just ``topic``.
    public var pushTopics: [PushTopic]
    /// Production, development, both or unknown.
    public var environment: CertificateEnvironment
    /// Start of validity, UNIX seconds.
    public var notBefore: Int64
    /// End of validity, UNIX seconds.
    public var notAfter: Int64
    /// The moment the summary describes, UNIX seconds.
    public var now: Int64
    /// The public key's algorithm and size.
    public var key: KeyDescription
    /// Whether the private key belongs to the certificate; nil when there is no key.
    public var keyMatches: Bool?
    /// SHA-256 fingerprint, colon-separated uppercase hex (as `openssl x509 -fingerprint` prints).
    public var sha256Fingerprint: String
    /// SHA-1 fingerprint, colon-separated uppercase hex.
    public var sha1Fingerprint: String
    /// Serial number, lowercase hex.
    public var serialNumber: String
    /// Subjects of the chain certificates, leaf-most first.
    public var chainSubjects: [String]

    /// Summarises a certificate (and optionally its key and chain) as of `now`.
    ///
    /// - Parameters:
    ///   - certificate: The certificate.
    ///   - privateKey: A key to check against it, or nil (then ``keyMatches`` is nil).
    ///   - chain: Chain certificates to list.
    ///   - now: The moment to judge validity at, in UNIX seconds.
    public init(certificate: Certificate, privateKey: PrivateKey? = nil, chain: [Certificate] = [], now: Int64) {
        let subjectName = certificate.subjectName
        subject = subjectName.description
        issuer = certificate.issuer
        commonName = subjectName.commonName
        teamID = certificate.isCertificateAuthority ? nil : subjectName.organizationalUnit
        topic = subjectName.uid
        pushTopics = certificate.topics
        environment = certificate.environment
        notBefore = certificate.notBefore
        notAfter = certificate.notAfter
        self.now = now
        key = certificate.publicKeyDescription
        keyMatches = privateKey.map { $0.matches(certificate) }
        sha256Fingerprint = Self.hex(certificate.sha256Fingerprint, separator: ":", uppercase: true)
        sha1Fingerprint = Self.hex(certificate.sha1Fingerprint, separator: ":", uppercase: true)
        serialNumber = Self.hex(certificate.serialNumber, separator: "", uppercase: false)
        chainSubjects = chain.map(\.subject)
    }

    /// Summarises loaded credentials as of `now`.
    public init(_ credentials: Credentials, now: Int64) {
        self.init(
            certificate: credentials.certificate, privateKey: credentials.privateKey, chain: credentials.chain,
            now: now)
    }

    /// The topic names, as the JSON `topics` array shows them.
    public var topics: [String] { pushTopics.map(\.name) }

    /// Whole days from ``now`` until ``notAfter``, rounded down; negative once expired.
    public var daysLeft: Int {
        let difference = notAfter - now
        // Floor division, so 1 second past expiry is -1 day, not 0.
        return Int(difference >= 0 ? difference / 86400 : -((-difference + 86399) / 86400))
    }

    /// Whether ``now`` is after ``notAfter``.
    public var isExpired: Bool { now > notAfter }

    /// Whether ``now`` is before ``notBefore``.
    public var isNotYetValid: Bool { now < notBefore }

    /// Whether the certificate is still valid but has fewer than ``warningPeriodDays`` days left.
    public var expiresSoon: Bool { !isExpired && daysLeft < Self.warningPeriodDays }

    /// ``notBefore`` as ISO-8601 UTC text.
    public var notBeforeISO8601: String { UTCTime.iso8601(notBefore) }

    /// ``notAfter`` as ISO-8601 UTC text.
    public var notAfterISO8601: String { UTCTime.iso8601(notAfter) }

    static func hex(_ bytes: [UInt8], separator: String, uppercase: Bool) -> String {
        let digits = Array(uppercase ? "0123456789ABCDEF" : "0123456789abcdef")
        return bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 0xF)]]) }.joined(separator: separator)
    }
}
