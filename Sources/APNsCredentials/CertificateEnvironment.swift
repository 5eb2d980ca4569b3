import APNsCore

/// Which APNs environment a push certificate is for, from Apple's marker extensions.
///
/// `1.2.840.113635.100.6.3.1` marks development (sandbox), `1.2.840.113635.100.6.3.2` production;
/// universal "Apple Push Services" certificates carry both.
public enum CertificateEnvironment: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Production only.
    case production
    /// Development (sandbox) only.
    case development
    /// Both environments (a universal certificate).
    case both
    /// Neither marker: not an Apple push certificate, or an unfamiliar one.
    case unknown

    /// The raw value: "production", "development", "both" or "unknown".
    public var description: String { rawValue }

    /// The environment the two markers say.
    init(development: Bool, production: Bool) {
        switch (development, production) {
        case (true, true): self = .both
        case (true, false): self = .development
        case (false, true): self = .production
        case (false, false): self = .unknown
        }
    }
}
