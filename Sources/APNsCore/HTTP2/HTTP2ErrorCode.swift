/// The 32-bit error code of an HTTP/2 RST_STREAM or GOAWAY frame (RFC 9113 §7).
///
/// An open struct: a code no registry knows yet decodes, keeps its number and prints it.
///
/// ```
/// RST_STREAM payload            GOAWAY payload
/// +-------------------+         +-+-----------------------+
/// | Error Code (32)   |         |R| Last-Stream-ID (31)   |
/// +-------------------+         +-+-----------------------+
///                               | Error Code (32)         |
///                               +-------------------------+
///                               | Additional Debug Data   |   APNs: {"reason":"..."}
///                               +-------------------------+
/// ```
public struct HTTP2ErrorCode: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The code on the wire.
    public var rawValue: UInt32

    /// Wraps any code.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// 0x0: a graceful shutdown or a stream closed normally.
    public static let noError = HTTP2ErrorCode(rawValue: 0x0)
    /// 0x1: the peer broke the protocol.
    public static let protocolError = HTTP2ErrorCode(rawValue: 0x1)
    /// 0x2: the sender hit an unexpected internal error.
    public static let internalError = HTTP2ErrorCode(rawValue: 0x2)
    /// 0x3: flow-control limits were violated.
    public static let flowControlError = HTTP2ErrorCode(rawValue: 0x3)
    /// 0x4: SETTINGS were not acknowledged in time.
    public static let settingsTimeout = HTTP2ErrorCode(rawValue: 0x4)
    /// 0x5: a frame arrived on a half-closed stream.
    public static let streamClosed = HTTP2ErrorCode(rawValue: 0x5)
    /// 0x6: a frame had an invalid size.
    public static let frameSizeError = HTTP2ErrorCode(rawValue: 0x6)
    /// 0x7: the stream was refused before any processing: it is safe to retry elsewhere.
    public static let refusedStream = HTTP2ErrorCode(rawValue: 0x7)
    /// 0x8: the stream is no longer needed.
    public static let cancel = HTTP2ErrorCode(rawValue: 0x8)
    /// 0x9: the header compression context cannot be maintained.
    public static let compressionError = HTTP2ErrorCode(rawValue: 0x9)
    /// 0xa: the CONNECT tunnel broke.
    public static let connectError = HTTP2ErrorCode(rawValue: 0xa)
    /// 0xb: the peer is generating excessive load.
    public static let enhanceYourCalm = HTTP2ErrorCode(rawValue: 0xb)
    /// 0xc: the transport does not meet minimum security requirements.
    public static let inadequateSecurity = HTTP2ErrorCode(rawValue: 0xc)
    /// 0xd: the request must be repeated over HTTP/1.1.
    public static let http11Required = HTTP2ErrorCode(rawValue: 0xd)

    /// The RFC name ("REFUSED_STREAM"), or "0x2a" for a code the RFC does not define.
    public var description: String {
        switch rawValue {
        case 0x0: "NO_ERROR"
        case 0x1: "PROTOCOL_ERROR"
        case 0x2: "INTERNAL_ERROR"
        case 0x3: "FLOW_CONTROL_ERROR"
        case 0x4: "SETTINGS_TIMEOUT"
        case 0x5: "STREAM_CLOSED"
        case 0x6: "FRAME_SIZE_ERROR"
        case 0x7: "REFUSED_STREAM"
        case 0x8: "CANCEL"
        case 0x9: "COMPRESSION_ERROR"
        case 0xa: "CONNECT_ERROR"
        case 0xb: "ENHANCE_YOUR_CALM"
        case 0xc: "INADEQUATE_SECURITY"
        case 0xd: "HTTP_1_1_REQUIRED"
        default: "0x" + String(rawValue, radix: 16)
        }
    }
}
