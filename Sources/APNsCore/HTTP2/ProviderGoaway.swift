/// A GOAWAY from APNs, understood: which streams it still answers, why it came, what to do.
///
/// APNs puts a JSON object `{"reason":"Shutdown"}` in the GOAWAY's debug data (SNR, CwA). Streams
/// with an identifier above ``lastStreamID`` were not processed and may be sent again on a new
/// connection without counting as an attempt; streams at or below it still get their responses
/// (RFC 9113 §6.8).
public struct ProviderGoaway: Hashable, Sendable, CustomStringConvertible {
    /// The highest stream the server processed or may still process.
    public var lastStreamID: Int32
    /// The HTTP/2 error code.
    public var errorCode: HTTP2ErrorCode
    /// The `reason` of the debug data, if it held one.
    public var reason: ProviderReason?
    /// The debug data when it was not the JSON APNs sends (text from another server), for messages.
    public var debugText: String?

    /// Reads a GOAWAY's fields; debug data that is not a JSON object is kept as text (at most 256
    /// bytes of it) instead of a reason.
    public init(lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: some Collection<UInt8>) {
        self = withContiguousBytes(debugData) {
            ProviderGoaway(lastStreamID: lastStreamID, errorCode: errorCode, debugData: $0)
        }
    }

    /// Reads a GOAWAY's fields from the debug data in memory (the HTTP/2 session's bytes).
    package init(lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: UnsafeRawBufferPointer) {
        self.lastStreamID = lastStreamID
        self.errorCode = errorCode
        reason = nil
        debugText = nil
        guard !debugData.isEmpty else { return }
        switch ProviderResponse.decodeBody(debugData) {
        case .success(let body): reason = body.reason
        case .failure:
            debugText = String(decoding: UnsafeRawBufferPointer(rebasing: debugData.prefix(256)), as: UTF8.self)
        }
    }

    /// Whether the server processed (or will answer) `stream`.
    public func wasProcessed(stream: Int32) -> Bool { stream <= lastStreamID }

    /// What the GOAWAY means for the connection (see ``RetryAdvice/init(goawayErrorCode:reason:)``).
    public var advice: RetryAdvice { RetryAdvice(goawayErrorCode: errorCode, reason: reason) }

    /// "GOAWAY NO_ERROR after stream 7: Shutdown".
    public var description: String {
        var text = "GOAWAY \(errorCode) after stream \(lastStreamID)"
        if let reason { text += ": \(reason)" } else if let debugText { text += ": \(debugText)" }
        return text
    }
}
