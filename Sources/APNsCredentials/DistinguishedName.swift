import APNsCore

/// A certificate's subject or issuer name: its attributes in certificate order, with accessors for
/// the ones Apple's push certificates use.
///
/// A provider certificate's subject reads `UID=<bundle id>`, `CN=Apple Push Services: <bundle id>`,
/// `OU=<team id>`; ``uid`` is therefore the topic to push to and ``organizationalUnit`` the team.
public struct DistinguishedName: Sendable, Hashable, CustomStringConvertible {
    /// One `type=value` pair of the name.
    public struct Attribute: Sendable, Hashable {
        /// The attribute type's short name (`CN`, `OU`, `UID`), or its dotted OID when OpenSSL has
        /// no short name for it.
        public var type: String
        /// The value as text.
        public var value: String

        /// Creates an attribute.
        public init(type: String, value: String) {
            self.type = type
            self.value = value
        }
    }

    /// The attributes in the order they appear in the certificate (most significant first for
    /// Apple's certificates: `UID`, `CN`, `OU`, `O`, `C`).
    public var attributes: [Attribute]

    /// Creates a name from attributes in certificate order.
    public init(attributes: [Attribute]) {
        self.attributes = attributes
    }

    /// The first value of an attribute type (`"CN"`, `"UID"`, ...), or nil.
    public subscript(type: String) -> String? {
        attributes.first { $0.type == type }?.value
    }

    /// The user ID (`UID`, OID 0.9.2342.19200300.100.1.1): the bundle id in a push certificate.
    public var uid: String? { self["UID"] }
    /// The common name (`CN`).
    public var commonName: String? { self["CN"] }
    /// The organizational unit (`OU`): the team id in a push certificate.
    public var organizationalUnit: String? { self["OU"] }
    /// The organization (`O`).
    public var organization: String? { self["O"] }

    /// The name on one line in RFC 4514 (RFC 2253) form, as `openssl x509 -nameopt RFC2253`
    /// prints it: last attribute first, comma-separated, special characters escaped. Non-ASCII
    /// text is kept as UTF-8 rather than escaped.
    public var description: String {
        attributes.reversed().map { "\($0.type)=\(Self.escape($0.value))" }.joined(separator: ",")
    }

    /// Escapes a value per RFC 4514 section 2.4.
    static func escape(_ value: String) -> String {
        var out = ""
        let characters = Array(value)
        for (index, character) in characters.enumerated() {
            switch character {
            case ",", "+", "\"", "\\", "<", ">", ";":
                out += "\\\(character)"
            case "#" where index == 0:
                out += "\\#"
            case " " where index == 0 || index == characters.count - 1:
                out += "\\ "
            case "\u{0}":
                out += "\\00"
            default:
                out.append(character)
            }
        }
        return out
    }
}
