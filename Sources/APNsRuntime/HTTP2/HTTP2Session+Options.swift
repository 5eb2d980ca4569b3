import APNsCore

extension HTTP2Session {
    /// How a session behaves, and the bounds that keep a hostile peer from making it grow.
    ///
    /// | threat | bound | enforced by |
    /// |---|---|---|
    /// | opening streams without end | ``maximumConcurrentStreams`` (sent as SETTINGS_MAX_CONCURRENT_STREAMS) | nghttp2: streams over a value not yet acknowledged get RST_STREAM REFUSED_STREAM, over the acknowledged value GOAWAY PROTOCOL_ERROR ("max concurrent streams exceeded") |
    /// | open-and-reset churn ("rapid reset") | ``streamResetBurst`` / ``streamResetRate`` (server) | nghttp2's token bucket (`nghttp2_option_set_stream_reset_rate_limit`): GOAWAY when empty |
    /// | huge header lists | ``maximumHeaderListSize`` (sent as SETTINGS_MAX_HEADER_LIST_SIZE) | this session: a block beyond it is reset with ENHANCE_YOUR_CALM; nghttp2 itself refuses a single field over 64 KiB (COMPRESSION_ERROR) |
    /// | header blocks split into endless CONTINUATIONs | ``maximumContinuations`` | nghttp2 (`nghttp2_option_set_max_continuations`): the session fails |
    /// | endless SETTINGS / PING that need answers, never read | ``maximumOutboundAcks`` | nghttp2 (`nghttp2_option_set_max_outbound_ack`): NGHTTP2_ERR_FLOODED, the session fails |
    /// | SETTINGS frames with very many entries | ``maximumSettingsEntries`` | nghttp2 (`nghttp2_option_set_max_settings`): GOAWAY |
    /// | output piling up | ``maximumBufferedOutput`` | this session: frames beyond it stay in nghttp2's queue (where the ACK limit above still counts them) until the owner drains with ``HTTP2Session/send(into:)`` |
    /// | a client queueing requests faster than the server takes them | ``maximumPendingRequests`` | this session: ``HTTP2Session/submitRequest(headers:body:)`` throws `streamUnavailable` |
    ///
    /// Closed streams are not retained (`nghttp2_option_set_no_closed_streams`), so a long
    /// connection's memory does not grow with the requests it served.
    package struct Options: Sendable {
        /// SETTINGS_MAX_CONCURRENT_STREAMS we advertise: how many streams the peer may open at
        /// once (a client's peer opens none: push is disabled). Default 1000, what APNs advertises.
        package var maximumConcurrentStreams: UInt32 = 1000
        /// Client: how many streams to assume the server allows before its SETTINGS arrive
        /// (nghttp2 assumes 100; APNs allows only 1 until a valid provider token was seen).
        package var peerMaxConcurrentStreams: UInt32?
        /// The largest header list accepted, counted as RFC 9113 does (name + value + 32 bytes per
        /// field); advertised as SETTINGS_MAX_HEADER_LIST_SIZE. Default 16 KiB: an APNs request with
        /// a provider token needs well under 1 KiB.
        package var maximumHeaderListSize: Int = 16 * 1024
        /// SETTINGS_INITIAL_WINDOW_SIZE we advertise; nil keeps HTTP/2's 65 535 bytes.
        package var initialWindowSize: UInt32?
        /// The connection's receive window (all streams together), raised from HTTP/2's 65 535
        /// bytes with a WINDOW_UPDATE right after the first SETTINGS; nil keeps 65 535. A server
        /// with many concurrent small requests (APNs: up to 1000 bodies of a few KiB) wants more.
        package var connectionWindowSize: Int32?
        /// How many output bytes the session stages by itself (answers serialised while
        /// ``HTTP2Session/receive(_:)`` runs, kept until the next ``HTTP2Session/send(into:)``), and
        /// roughly how many one ``HTTP2Session/send(into:)`` appends (frames are not split).
        /// Default 1 MiB.
        package var maximumBufferedOutput: Int = 1 << 20
        /// Queued SETTINGS and PING acknowledgements beyond which the peer counts as flooding.
        /// Default 1000 (nghttp2's).
        package var maximumOutboundAcks: Int = 1000
        /// SETTINGS entries per frame beyond which the peer breaks the protocol. Default 32 (nghttp2's).
        package var maximumSettingsEntries: Int = 32
        /// CONTINUATION frames per header block beyond which the peer breaks the protocol. Default
        /// 8 (nghttp2's).
        package var maximumContinuations: Int = 8
        /// Server: RST_STREAM frames a client may send at once before being cut off. Default 1000
        /// (nghttp2's).
        package var streamResetBurst: UInt64 = 1000
        /// Server: RST_STREAM frames per second a client regains. Default 33 (nghttp2's).
        package var streamResetRate: UInt64 = 33
        /// Client: requests submitted and not yet closed (open or waiting for a stream) beyond which
        /// ``HTTP2Session/submitRequest(headers:body:)`` refuses more. Default 10 000.
        package var maximumPendingRequests: Int = 10_000
        /// Further parameters for the first SETTINGS frame.
        package var additionalSettings: [HTTP2Setting] = []

        /// The defaults above.
        package init() {}

        /// The first SETTINGS frame: push disabled (client), the stream and header limits, the
        /// window, then ``additionalSettings``.
        func initialSettings(for role: Role) -> [HTTP2Setting] {
            var settings: [HTTP2Setting] = []
            if role == .client { settings.append(.enablePush(false)) }
            settings.append(.maxConcurrentStreams(maximumConcurrentStreams))
            settings.append(.maxHeaderListSize(UInt32(clamping: maximumHeaderListSize)))
            if let initialWindowSize { settings.append(.initialWindowSize(initialWindowSize)) }
            return settings + additionalSettings
        }
    }
}
