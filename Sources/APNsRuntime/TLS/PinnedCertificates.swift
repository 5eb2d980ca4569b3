import APNsCore
import APNsCredentials
internal import COpenSSL

/// Client certificates a server accepts by their SHA-256 fingerprint, whatever their chain and
/// validity: an old system holding an expired provider certificate can still connect to the
/// bridge when its certificate is pinned. Certificates that are not pinned are verified as usual
/// (chain to the trusted CAs, validity), so an unpinned expired one is refused.
final class PinnedCertificates: @unchecked Sendable {
    // @unchecked: immutable after init; read from OpenSSL's verify callback on any thread.
    let fingerprints: Set<[UInt8]>

    init(_ fingerprints: Set<[UInt8]>) {
        self.fingerprints = fingerprints
    }

    /// OpenSSL's verify callback: a pinned leaf passes at every depth; anything else keeps
    /// OpenSSL's own verdict.
    static let verify: @convention(c) (Int32, OpaquePointer?) -> Int32 = { preverified, store in
        guard preverified != 1, let store,
            let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
            let context = SSL_get_SSL_CTX(OpaquePointer(ssl)),
            let raw = SSL_CTX_get_ex_data(context, 0),
            let fingerprint = Certificate.fingerprintOfCertificate(inVerification: store)
        else { return preverified }
        let pins = Unmanaged<PinnedCertificates>.fromOpaque(raw).takeUnretainedValue()
        guard pins.fingerprints.contains(fingerprint) else { return preverified }
        X509_STORE_CTX_set_error(store, X509_V_OK)
        return 1
    }
}
