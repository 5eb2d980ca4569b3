import APNsCore
internal import COpenSSL

extension KeyDescription {
    /// Describes an `EVP_PKEY*` (public or private).
    init(key: OpaquePointer) {
        let bits = Int(EVP_PKEY_get_bits(key))
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA, EVP_PKEY_RSA_PSS:
            self.init(algorithm: .rsa, bits: bits)
        case EVP_PKEY_EC:
            self.init(algorithm: .ec, bits: bits, curve: Self.curveName(key))
        case EVP_PKEY_ED25519:
            self.init(algorithm: .ed25519, bits: bits)
        case EVP_PKEY_ED448:
            self.init(algorithm: .ed448, bits: bits)
        case EVP_PKEY_DSA:
            self.init(algorithm: .dsa, bits: bits)
        default:
            let name = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
            self.init(algorithm: Algorithm(rawValue: name), bits: bits)
        }
    }

    /// "P-256" for prime256v1 and the other NIST curves, else OpenSSL's group name.
    private static func curveName(_ key: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_utf8_string_param(key, "group", &buffer, buffer.count, &length) == 1 else {
            ERR_clear_error()
            return nil
        }
        let group = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if let nist = EC_curve_nid2nist(OBJ_txt2nid(group)) {
            return String(cString: nist)
        }
        return group
    }
}
