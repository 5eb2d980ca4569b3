/// How an HTTP/2 client proves who it is to APNs.
public enum ProviderCredentials: Sendable {
    /// Certificate authentication: the provider certificate and key (the same `.p12` that served
    /// the binary gateway works). The topics a certificate may push to are its subject UID and
    /// the topics of its 1.2.840.113635.100.6.3.6 extension.
    case certificate(ClientIdentity)
    /// Token authentication: an ES256 provider token signed with the team's `.p8` key, a fresh one
    /// per connection, replaced about every 50 minutes. One key serves every app of the team, so
    /// every request needs a topic.
    case token(SigningKey, keyID: String, teamID: String)

    /// Whether this is token authentication.
    public var usesTokens: Bool {
        if case .token = self { return true }
        return false
    }

    /// The certificate's topic (its subject UID), the default topic for certificate auth.
    public var certificateTopic: String? {
        if case .certificate(let identity) = self { return identity.certificate.topic }
        return nil
    }
}
