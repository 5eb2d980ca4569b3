import APNsCore

/// The fields of Apple's push (provider) certificates.
extension Certificate {
    /// Apple's certificate extension OIDs.
    enum AppleOID {
        /// Marks a development (sandbox) push certificate.
        static let development = "1.2.840.113635.100.6.3.1"
        /// Marks a production push certificate.
        static let production = "1.2.840.113635.100.6.3.2"
        /// The topics a universal certificate may push to.
        static let topics = "1.2.840.113635.100.6.3.6"
    }

    /// The topic to push to: the bundle id in the subject's UID (`com.example.app`), or nil when
    /// the subject has no UID (not a push certificate).
    public var topic: String? { subjectName.uid }

    /// The topics this certificate may push to, from Apple's topics extension
    /// (1.2.840.113635.100.6.3.6) when it is present and well-formed; otherwise just ``topic``
    /// (with no kinds), or an empty array when there is no topic either.
    public var topics: [PushTopic] {
        if let value = extensionValue(oid: AppleOID.topics), let topics = PushTopic.parseExtension(value) {
            return topics
        }
        return topic.map { [PushTopic(name: $0)] } ?? []
    }

    /// Whether the topics extension is present and well-formed (universal certificates carry it).
    public var hasTopicsExtension: Bool {
        extensionValue(oid: AppleOID.topics).flatMap(PushTopic.parseExtension) != nil
    }

    /// Which APNs environment the certificate is for, from Apple's marker extensions.
    public var environment: CertificateEnvironment {
        CertificateEnvironment(
            development: extensionValue(oid: AppleOID.development) != nil,
            production: extensionValue(oid: AppleOID.production) != nil)
    }
}
