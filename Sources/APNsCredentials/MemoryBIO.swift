import APNsCore
internal import COpenSSL

/// Owns one memory `BIO*`: the way bytes go into and out of OpenSSL's PEM and PKCS#12 functions.
///
/// Not `Sendable`: a BIO has a read position and is used by one function at a time.
final class MemoryBIO {
    /// The `BIO*`.
    let pointer: OpaquePointer

    /// An empty BIO for OpenSSL to write into.
    init() {
        guard let pointer = BIO_new(BIO_s_mem()) else {
            fatalError("OpenSSL could not allocate a memory BIO (out of memory)")
        }
        self.pointer = pointer
    }

    /// A BIO holding a copy of `bytes`, for OpenSSL to read from.
    convenience init(_ bytes: [UInt8]) {
        self.init()
        var offset = 0
        bytes.withUnsafeBytes { raw in
            while offset < raw.count {
                let chunk = Int32(clamping: raw.count - offset)
                let written = BIO_write(pointer, raw.baseAddress! + offset, chunk)
                guard written > 0 else { fatalError("OpenSSL could not fill a memory BIO (out of memory)") }
                offset += Int(written)
            }
        }
    }

    deinit {
        BIO_free(pointer)
    }

    /// Everything written to the BIO and not yet read.
    var contents: [UInt8] {
        var data: UnsafeMutablePointer<CChar>? = nil
        let count = COpenSSL_BIO_get_mem_data(pointer, &data)
        guard count > 0, let data else { return [] }
        return Array(UnsafeRawBufferPointer(start: data, count: count))
    }

    /// ``contents`` as text (PEM output is ASCII).
    var string: String {
        String(decoding: contents, as: UTF8.self)
    }
}
