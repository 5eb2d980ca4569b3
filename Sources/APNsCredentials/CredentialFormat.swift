import APNsCore

/// How credential bytes are encoded, told apart by content (never by file name).
public enum CredentialFormat: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A PKCS#12 (`.p12`/`.pfx`) file: DER `SEQUENCE { INTEGER 3, ... }`.
    case pkcs12
    /// PEM text: one or more `-----BEGIN ...-----` blocks (certificates, keys).
    case pem
    /// A DER-encoded X.509 certificate (`.cer`): DER `SEQUENCE { SEQUENCE tbsCertificate, ... }`.
    case der

    /// "pkcs12", "pem" or "der".
    public var description: String { rawValue }

    /// Looks at the first bytes and says what they are, or nil when they are none of the three.
    ///
    /// Only the start is examined, so a truncated PKCS#12 file is still recognised as one (and its
    /// parsing then fails with a precise reason instead of "unknown format").
    public static func detect(_ bytes: [UInt8]) -> CredentialFormat? {
        if isPEM(bytes) { return .pem }
        // Both start with a SEQUENCE; what comes first inside it tells them apart.
        guard let (tag, _, headerLength) = DERReader.header(bytes[...]), tag == DERReader.Tag.sequence,
            let (innerTag, innerLength, innerHeader) = DERReader.header(bytes[headerLength...])
        else { return nil }
        switch innerTag {
        case DERReader.Tag.integer:
            // PKCS#12's version is 3; PKCS#8 keys (version 0 or 1) are not credentials files.
            let valueIndex = headerLength + innerHeader
            guard innerLength == 1, valueIndex < bytes.count, bytes[valueIndex] == 3 else { return nil }
            return .pkcs12
        case DERReader.Tag.sequence:
            return .der
        default:
            return nil
        }
    }

    /// Whether the bytes contain a PEM boundary line near the start (text before it, such as
    /// `openssl pkcs12` "Bag Attributes" lines, is allowed).
    private static func isPEM(_ bytes: [UInt8]) -> Bool {
        let marker = Array("-----BEGIN ".utf8)
        let window = bytes.prefix(64 * 1024)
        guard window.count >= marker.count else { return false }
        // Binary DER never starts with printable text; PEM files always do.
        if let first = window.first, first == DERReader.Tag.sequence { return false }
        var index = window.startIndex
        while index + marker.count <= window.endIndex {
            if window[index..<index + marker.count].elementsEqual(marker) { return true }
            index += 1
        }
        return false
    }
}
