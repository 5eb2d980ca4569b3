import APNsCore

/// What kind of key a certificate or private key holds: algorithm, size and (for EC) curve.
public struct KeyDescription: Sendable, Hashable, CustomStringConvertible {
    /// A public-key algorithm. Open for growth: unknown algorithms keep OpenSSL's name.
    public struct Algorithm: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The display name ("RSA", "EC", "Ed25519").
        public var rawValue: String
        /// Creates an algorithm from its display name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The name, as ``rawValue``.
        public var description: String { rawValue }

        /// RSA (every Apple push certificate uses 2048-bit RSA).
        public static let rsa = Algorithm(rawValue: "RSA")
        /// Elliptic-curve keys (ECDSA/ECDH).
        public static let ec = Algorithm(rawValue: "EC")
        /// Ed25519.
        public static let ed25519 = Algorithm(rawValue: "Ed25519")
        /// Ed448.
        public static let ed448 = Algorithm(rawValue: "Ed448")
        /// DSA.
        public static let dsa = Algorithm(rawValue: "DSA")
    }

    /// The algorithm.
    public var algorithm: Algorithm
    /// The key size in bits as OpenSSL counts it (the modulus for RSA, the field for EC).
    public var bits: Int
    /// The curve of an EC key, by its NIST name where there is one ("P-256"), else OpenSSL's.
    public var curve: String?

    /// Creates a description.
    public init(algorithm: Algorithm, bits: Int, curve: String? = nil) {
        self.algorithm = algorithm
        self.bits = bits
        self.curve = curve
    }

    /// "RSA 2048-bit", "EC P-256", "Ed25519".
    public var description: String {
        switch algorithm {
        case .ed25519, .ed448: algorithm.rawValue
        case .ec: "EC \(curve ?? "\(bits)-bit")"
        default: "\(algorithm.rawValue) \(bits)-bit"
        }
    }
}
