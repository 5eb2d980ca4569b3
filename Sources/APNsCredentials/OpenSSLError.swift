import APNsCore
internal import COpenSSL

/// The OpenSSL error queue at the moment something failed, as text.
///
/// Library APIs throw `LegacyAPNsError` with a human reason; this type carries the raw OpenSSL
/// detail for logs and for code that needs to tell failures apart.
public struct OpenSSLError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was being done ("SSL_connect", "PKCS12_parse").
    public var operation: String
    /// The queued error strings, oldest first, as `ERR_error_string_n` renders them.
    public var messages: [String]
    /// `(library, reason)` of each queued error, for matching specific failures.
    var codes: [Code]

    struct Code: Hashable, Sendable {
        var library: Int32
        var reason: Int32
    }

    /// The operation and the queued OpenSSL messages.
    public var description: String {
        messages.isEmpty ? "\(operation) failed" : "\(operation) failed: \(messages.joined(separator: "; "))"
    }

    /// The last (most specific) queued reason text, e.g. "bad decrypt" or "certificate verify failed".
    public var shortReason: String? {
        guard let last = messages.last else { return nil }
        // "error:0308010C:digital envelope routines::unsupported" -> "unsupported"
        return last.split(separator: ":", omittingEmptySubsequences: false).last.map(String.init)
    }

    /// Whether any queued error has this reason code (e.g. `PKCS12_R_MAC_VERIFY_FAILURE`).
    package func contains(reason: Int32) -> Bool {
        codes.contains { $0.reason == reason }
    }

    /// Empties the calling thread's OpenSSL error queue into an error value.
    package static func drain(_ operation: String) -> OpenSSLError {
        var messages: [String] = []
        var codes: [Code] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            ERR_error_string_n(code, &buffer, buffer.count)
            let text = buffer.withUnsafeBufferPointer { pointer in
                String(decoding: UnsafeRawBufferPointer(pointer).prefix { $0 != 0 }, as: UTF8.self)
            }
            messages.append(text)
            codes.append(Code(library: COpenSSL_ERR_GET_LIB(code), reason: COpenSSL_ERR_GET_REASON(code)))
        }
        return OpenSSLError(operation: operation, messages: messages, codes: codes)
    }
}
