import APNsCore

/// Receives what an ``HTTP2Session`` reads: header fields, data, stream ends and closes,
/// connection frames.
///
/// Every call happens on the session owner's thread, inside ``HTTP2Session/receive(_:)`` or
/// ``HTTP2Session/send(into:)``. Byte views (`name`, `value`, `bytes`, `debugData`) are valid only
/// during the call: parse or copy what you keep. A delegate may call the session's `submit...`
/// methods from inside a call (answering a request as soon as it ends, say), but not `receive` or
/// `send`, and must not touch the writer that the running ``HTTP2Session/send(into:)`` fills.
///
/// Every method has an empty default, so a delegate implements only what it needs.
package protocol HTTP2SessionDelegate: AnyObject {
    /// A header block (HEADERS, with any CONTINUATION) starts on `stream`. On a server this is a new
    /// request; on a client, a response (or trailers).
    func didBeginHeaders(stream: Int32)
    /// One header field of the block, decoded. Pseudo-headers (`:status`, `:path`, ...) come first.
    func didReceiveHeader(stream: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
    /// The block is complete; `endStream` when the peer sends nothing more on `stream` (no body).
    func didEndHeaders(stream: Int32, endStream: Bool)
    /// A piece of the body of `stream`, flow control already accounted for.
    func didReceiveData(stream: Int32, bytes: UnsafeRawBufferPointer)
    /// The DATA frame that ends `stream` from the peer's side arrived: its body is complete.
    func didEndData(stream: Int32)
    /// `stream` closed: `.noError` after a normal exchange, otherwise the RST_STREAM code (sent or
    /// received). A request that never started (GOAWAY arrived before its HEADERS went out) closes
    /// with `.refusedStream`: not processed, safe to send again. The last call for a stream.
    func didCloseStream(stream: Int32, errorCode: HTTP2ErrorCode)
    /// The peer reset `stream` (RST_STREAM); ``didCloseStream(stream:errorCode:)`` follows.
    func didReceiveRstStream(stream: Int32, errorCode: HTTP2ErrorCode)
    /// The peer sent GOAWAY: streams above `lastStreamID` were not processed (the session closes
    /// those of them that were open with `.refusedStream`, and no new stream can start).
    func didReceiveGoaway(lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: UnsafeRawBufferPointer)
    /// The peer's SETTINGS, already applied (``HTTP2Session/remoteMaxConcurrentStreams`` is current).
    func didReceiveSettings(_ settings: HTTP2Settings)
    /// The peer acknowledged a ``HTTP2Session/submitPing(_:)``.
    func didReceivePingAck(_ payload: UInt64)
    /// Server: the peer opened `stream` beyond our SETTINGS_MAX_CONCURRENT_STREAMS. nghttp2's answer
    /// follows unless the delegate ends the connection here (``HTTP2Session/terminate(errorCode:reason:)``):
    /// while the peer has not acknowledged the limit, `stream` is refused (RST_STREAM
    /// REFUSED_STREAM); after, GOAWAY PROTOCOL_ERROR.
    func didExceedStreamLimit(stream: Int32)
}

extension HTTP2SessionDelegate {
    package func didBeginHeaders(stream: Int32) {}
    package func didReceiveHeader(stream: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {}
    package func didEndHeaders(stream: Int32, endStream: Bool) {}
    package func didReceiveData(stream: Int32, bytes: UnsafeRawBufferPointer) {}
    package func didEndData(stream: Int32) {}
    package func didCloseStream(stream: Int32, errorCode: HTTP2ErrorCode) {}
    package func didReceiveRstStream(stream: Int32, errorCode: HTTP2ErrorCode) {}
    package func didReceiveGoaway(lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: UnsafeRawBufferPointer) {}
    package func didReceiveSettings(_ settings: HTTP2Settings) {}
    package func didReceivePingAck(_ payload: UInt64) {}
    package func didExceedStreamLimit(stream: Int32) {}
}
