import APNsCore
internal import COpenSSL

/// The OpenSSL state LegacyAPNs uses, created once on first use.
///
/// Everything runs in a private `OSSL_LIB_CTX` holding both the `default` and the `legacy`
/// providers, so Keychain-era PKCS#12 files (RC2-40 certificate bags) open, while the process-wide
/// default context of the host program stays untouched. `legacy` without `default` would break
/// everything, hence both.
///
/// The first use also sets SIGPIPE to ignored: OpenSSL writes to sockets with plain `write`, and a
/// peer that closed must surface as an `EPIPE` error, not kill the process.
package final class OpenSSLLibrary: @unchecked Sendable {
    // @unchecked: `context` is written once in `init` and OpenSSL's library contexts and providers
    // are thread-safe for the read-only use made of them afterwards.

    package static let shared = OpenSSLLibrary()

    /// The private `OSSL_LIB_CTX*`.
    package let context: OpaquePointer
    /// Whether the `legacy` provider loaded (its module may be missing on a stripped system).
    let hasLegacyProvider: Bool

    private init() {
        COpenSSL_ignore_sigpipe()
        guard let context = OSSL_LIB_CTX_new() else {
            fatalError("OpenSSL could not create a library context (out of memory)")
        }
        self.context = context
        _ = OSSL_PROVIDER_load(context, "default")
        hasLegacyProvider = OSSL_PROVIDER_load(context, "legacy") != nil
        ERR_clear_error()
    }

    /// Runs `body` with the private context as this thread's default, so OpenSSL functions without
    /// an `_ex` variant (PKCS#12 parsing among them) use it too.
    func withContext<Result>(_ body: () throws -> Result) rethrows -> Result {
        let previous = OSSL_LIB_CTX_set0_default(context)
        defer { OSSL_LIB_CTX_set0_default(previous) }
        return try body()
    }
}
