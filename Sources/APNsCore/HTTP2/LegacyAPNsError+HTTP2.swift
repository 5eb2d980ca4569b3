/// Error codes of the HTTP/2 provider API, added beside the binary ones without touching them.
extension LegacyAPNsError.Code {
    /// The HTTP/2 peer broke the protocol (bytes that are not HTTP/2, a bad frame, flooding, an
    /// oversized header block): the connection is closing, after a GOAWAY where one can be sent.
    public static let protocolViolation = LegacyAPNsError.Code(rawValue: "protocolViolation")
    /// No HTTP/2 stream is available for a request or response: the connection is going away
    /// (GOAWAY sent or received), its stream identifiers are used up, the stream has closed, or the
    /// local queue of waiting requests is full.
    public static let streamUnavailable = LegacyAPNsError.Code(rawValue: "streamUnavailable")
    /// A server response that cannot be understood (a body that is not a JSON object, a `:status`
    /// that is not three digits).
    public static let malformedResponse = LegacyAPNsError.Code(rawValue: "malformedResponse")
}
